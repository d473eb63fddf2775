package storetest

import (
	"testing"
	"time"

	"hookbox/app"
)

// testAudit: entries come back newest first with every field, each filter
// selects, Before and Limit page, and DeleteAuditBefore deletes only older
// entries, at most limit at a time.
func testAudit(t *testing.T, open Opener) {
	s := openAccess(t, open)
	entries := []app.AuditEntry{
		{At: T0, Actor: "ann", Via: "session", From: "10.0.0.1", Action: "login", Result: app.AuditOK},
		{At: T0.Add(time.Minute), Actor: "bob", Via: "basic", From: "10.0.0.2", Action: "login", Detail: "bad password", Result: app.AuditFailed},
		{At: T0.Add(2 * time.Minute), Actor: "ann", Via: "session", From: "10.0.0.1", Action: "user.add", Target: "bob", Detail: "operator", Result: app.AuditOK},
		{At: T0.Add(3 * time.Minute), Actor: "token:ci", Via: "token", From: "10.0.0.3", Action: "replay", Target: "d-1", Result: app.AuditDenied},
		{At: T0.Add(4 * time.Minute), Actor: "ann", Via: "session", From: "10.0.0.1", Action: "user.remove", Target: "bob", Result: app.AuditOK},
	}
	for _, e := range entries {
		if err := s.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	all, err := s.Audit(ctx, app.AuditQuery{})
	if err != nil || len(all) != len(entries) {
		t.Fatalf("Audit = %d entries, %v; want %d", len(all), err, len(entries))
	}
	for i, got := range all {
		want := entries[len(entries)-1-i]
		want.Seq = got.Seq
		if !got.At.Equal(want.At) {
			t.Errorf("entry %d At %v; want %v", i, got.At, want.At)
		}
		got.At = want.At
		if got != want {
			t.Errorf("entry %d = %+v; want %+v", i, got, want)
		}
		if i > 0 && got.Seq >= all[i-1].Seq {
			t.Errorf("entry %d seq %d not below %d", i, got.Seq, all[i-1].Seq)
		}
	}
	targets := func(q app.AuditQuery) []string {
		es, err := s.Audit(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.Action+"/"+e.Actor)
		}
		return out
	}
	for _, c := range []struct {
		name string
		q    app.AuditQuery
		want []string
	}{
		{"Actor", app.AuditQuery{Actor: "ann"}, []string{"user.remove/ann", "user.add/ann", "login/ann"}},
		{"Action", app.AuditQuery{Action: "login"}, []string{"login/bob", "login/ann"}},
		{"ActionPrefix", app.AuditQuery{Action: "user."}, []string{"user.remove/ann", "user.add/ann"}},
		{"Result", app.AuditQuery{Result: app.AuditDenied}, []string{"replay/token:ci"}},
		{"Since", app.AuditQuery{Since: T0.Add(3 * time.Minute)}, []string{"user.remove/ann", "replay/token:ci"}},
		{"Until", app.AuditQuery{Until: T0.Add(time.Minute)}, []string{"login/ann"}},
		{"Limit", app.AuditQuery{Limit: 2}, []string{"user.remove/ann", "replay/token:ci"}},
		{"Before", app.AuditQuery{Before: all[1].Seq, Limit: 2}, []string{"user.add/ann", "login/bob"}},
		{"BeforeFiltered", app.AuditQuery{Before: all[0].Seq, Actor: "ann", Limit: 1}, []string{"user.add/ann"}},
	} {
		if got := targets(c.q); !equalStrings(got, c.want) {
			t.Errorf("%s: %v; want %v", c.name, got, c.want)
		}
	}
	n, err := s.DeleteAuditBefore(ctx, T0.Add(3*time.Minute), 2)
	if err != nil || n != 2 {
		t.Fatalf("DeleteAuditBefore = %d, %v; want 2", n, err)
	}
	if n, err = s.DeleteAuditBefore(ctx, T0.Add(3*time.Minute), 100); err != nil || n != 1 {
		t.Fatalf("DeleteAuditBefore again = %d, %v; want 1", n, err)
	}
	if got, want := targets(app.AuditQuery{}), []string{"user.remove/ann", "replay/token:ci"}; !equalStrings(got, want) {
		t.Errorf("after delete %v; want %v", got, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
