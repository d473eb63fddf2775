package web_test

import (
	"context"
	"io"
	"net/http"
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

// A token may not change users or tokens, whatever its role: the refusal
// is one entry, denied, with the token as actor; nothing is changed.
func TestAudit_TokenDeniedUserChange(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	ctx := context.Background()
	access := f.srv.Access()
	users := len(access.Users())
	secret, err := access.CreateToken(ctx, app.Who{Actor: "ops", Via: "cli", From: "local"}, "robot", app.RoleAdmin, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body, action string }{
		{"POST", "/api/v1/users", `{"name": "eve", "role": "admin", "password": "eve-secret-password"}`, app.AuditUserAdd},
		{"POST", "/api/v1/tokens", `{"name": "more", "role": "admin"}`, app.AuditTokenCreate},
		{"DELETE", "/api/v1/tokens/robot", "", app.AuditTokenRevoke},
	} {
		req, _ := http.NewRequest(c.method, f.base+c.path, strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+secret)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 403 {
			t.Errorf("%s %s with an admin token: %d %s, want 403", c.method, c.path, resp.StatusCode, body)
		}
		got, err := access.Audit(ctx, app.AuditQuery{Action: c.action})
		if err != nil {
			t.Fatal(err)
		}
		var denied int
		for _, e := range got {
			if e.Result == app.AuditDenied {
				denied++
				if e.Actor != "token:robot" || e.Via != "token" || strings.Contains(e.Detail, "eve-secret-password") {
					t.Errorf("denied entry %+v", e)
				}
			}
		}
		if denied != 1 {
			t.Errorf("%s: %d denied entries, want 1 (%+v)", c.action, denied, got)
		}
	}
	if len(access.Users()) != users || len(access.Tokens()) != 1 {
		t.Errorf("a refused change changed something: users %+v tokens %+v", access.Users(), access.Tokens())
	}
}
