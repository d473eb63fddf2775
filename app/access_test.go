package app_test

import (
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

func TestParseRole(t *testing.T) {
	for _, name := range []string{"viewer", "operator", "admin"} {
		r, err := app.ParseRole(name)
		if err != nil || r.String() != name {
			t.Errorf("ParseRole(%q) = %v, %v", name, r, err)
		}
	}
	for _, bad := range []string{"", "Admin", "root", "none"} {
		if _, err := app.ParseRole(bad); err == nil || app.ErrorCode(err) != app.EINVALID {
			t.Errorf("ParseRole(%q) = %v, want an invalid error", bad, err)
		}
	}
	if !app.RoleAdmin.Allows(app.RoleOperator) || app.RoleViewer.Allows(app.RoleOperator) || app.RoleNone.Allows(app.RoleNone) {
		t.Error("Allows orders the roles wrong")
	}
}

func TestParseExpiry(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "0": 0, "90d": 90 * 24 * time.Hour, "12h": 12 * time.Hour} {
		if got, err := app.ParseExpiry(in); err != nil || got != want {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"d", "-1d", "1.5d", "x", "-3h", "99999999d", "090d"} {
		if _, err := app.ParseExpiry(bad); err == nil {
			t.Errorf("ParseExpiry(%q) took it", bad)
		}
	}
}

func TestValidAccessName(t *testing.T) {
	for _, ok := range []string{"admin", "ci", "ana.lopez@shop", "bot-2", "a_b"} {
		if err := app.ValidAccessName("user", ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "-x", ".x", "a b", "a/b", "é", strings.Repeat("a", 65), "a\nb"} {
		if err := app.ValidAccessName("user", bad); err == nil {
			t.Errorf("%q taken", bad)
		}
	}
}

func TestTokenSecret(t *testing.T) {
	a, b := app.NewTokenSecret(), app.NewTokenSecret()
	if a == b || !app.LooksLikeToken(a) || !strings.HasPrefix(a, "hbx_") {
		t.Fatalf("secrets %q %q", a, b)
	}
	if app.LooksLikeToken("hbx_short") || app.LooksLikeToken(strings.Replace(a, "hbx_", "hbz_", 1)) {
		t.Error("LooksLikeToken takes what is not a token")
	}
	if app.TokenHash(a) == app.TokenHash(b) {
		t.Error("two secrets, one hash")
	}
}

func TestAuditQueryMatch(t *testing.T) {
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	e := app.AuditEntry{At: at, Actor: "ana", Action: "user.add", Result: app.AuditOK}
	for _, c := range []struct {
		q    app.AuditQuery
		want bool
	}{
		{app.AuditQuery{}, true},
		{app.AuditQuery{Actor: "ana"}, true},
		{app.AuditQuery{Actor: "bob"}, false},
		{app.AuditQuery{Action: "user."}, true},
		{app.AuditQuery{Action: "user"}, false},
		{app.AuditQuery{Action: "token."}, false},
		{app.AuditQuery{Result: app.AuditFailed}, false},
		{app.AuditQuery{Since: at}, true},
		{app.AuditQuery{Until: at}, false},
		{app.AuditQuery{Since: at.Add(-time.Hour), Until: at.Add(time.Second)}, true},
	} {
		if got := c.q.Match(&e); got != c.want {
			t.Errorf("%+v: Match = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestCleanAuditEntry(t *testing.T) {
	e := app.CleanAuditEntry(app.AuditEntry{Actor: "a\nb", Detail: strings.Repeat("é", 800)})
	if e.Actor != "a b" || len(e.Detail) > 1000 || !strings.HasPrefix(e.Detail, "é") {
		t.Errorf("cleaned: %q, %d bytes", e.Actor, len(e.Detail))
	}
}
