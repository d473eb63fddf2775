package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// Each state-changing route leaves exactly one audit entry with the right
// actor; a dry run leaves none, a cached Basic credential no login entry,
// and no secret is in any entry.
func TestAudit_OneEntryPerAction(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	f.fill()
	steps := []struct{ path, body string }{
		{"/api/v1/replay", `{"since": "1h", "dry_run": true}`}, // nothing
		{"/api/v1/dead-letters/replay", ""},
		{"/api/v1/destinations/pos/pause", `{"reason": "ERP maintenance"}`},
		{"/api/v1/destinations/pos/resume", ""},
		{"/api/v1/replay", `{"since": "1h", "status": "dead"}`},
		{"/api/v1/destinations/erp-warehouse-integration/retry", ""},
		{"/api/v1/users", `{"name": "ann", "role": "viewer", "password": "ann-secret-password"}`},
		{"/api/v1/tokens", `{"name": "ci", "role": "operator"}`},
	}
	var secret string
	for _, s := range steps {
		code, body := f.postJSON(s.path, s.body)
		if code >= 300 {
			t.Fatalf("%s: %d %s", s.path, code, body)
		}
		if s.path == "/api/v1/tokens" {
			secret = string(body)
		}
	}
	if code, _ := f.get("/api/v1/backup"); code != 404 { // no backup in this server: a failed download
		t.Fatalf("backup: %d", code)
	}
	entries, err := f.srv.Access().Audit(context.Background(), app.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range entries {
		count[e.Action]++
		if e.Actor != "ops" || e.Via != "basic" || e.From == "" {
			t.Errorf("entry %+v: want actor ops via basic from an address", e)
		}
		for _, bad := range []string{"ann-secret-password", "pw-1234", app.TokenPrefix} {
			if strings.Contains(e.Detail+e.Target, bad) {
				t.Errorf("entry %+v holds a secret", e)
			}
		}
		switch e.Action {
		case app.AuditPause:
			if e.Target != "pos" || !strings.Contains(e.Detail, "ERP maintenance") {
				t.Errorf("pause entry %+v", e)
			}
		case app.AuditReplayQuery:
			if !strings.Contains(e.Target, "status=dead") || !strings.Contains(e.Detail, "matched") {
				t.Errorf("replay by query entry %+v: want its query and counts", e)
			}
		case app.AuditBackup:
			if e.Result != app.AuditFailed {
				t.Errorf("backup entry %+v: want failed", e)
			}
		}
	}
	want := map[string]int{app.AuditLogin: 1, app.AuditReplayDead: 1, app.AuditPause: 1, app.AuditResume: 1, app.AuditReplayQuery: 1,
		app.AuditRetryDest: 1, app.AuditUserAdd: 1, app.AuditTokenCreate: 1, app.AuditBackup: 1}
	for a, n := range want {
		if count[a] != n {
			t.Errorf("%d %s entries; want %d (all: %v)", count[a], a, n, count)
		}
	}
	if len(entries) != len(want) {
		t.Errorf("%d entries; want %d: %v", len(entries), len(want), count)
	}
	if !strings.Contains(secret, app.TokenPrefix) {
		t.Errorf("token answer %s: no secret shown", secret)
	}
}
