package cli

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

var tokenLine = regexp.MustCompile(`(?m)^(hbx_\S+)$`)

// TestUserToken_Bbolt: user and token commands on a stopped bbolt server
// (straight into the file) and a running one (request files the server
// answers), each change audited once as local:USER via cli, kept over a
// restart.
func TestUserToken_Bbolt(t *testing.T) {
	config := writeTestConfig(t, "", "")
	must := func(want string, args ...string) string {
		t.Helper()
		code, out := runCmd(append(args, "-config", config)...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("%v: %d\n%s", args, code, out)
		}
		return out
	}
	// Stopped.
	pipeStdin(t, "bob-password-1\n")
	must("user bob added with role viewer", "user", "add", "bob", "-role", "viewer")
	out := must("token ci created", "token", "create", "-name", "ci", "-role", "operator", "-expires", "90d")
	if !tokenLine.MatchString(out) || !strings.Contains(out, "cannot be shown again") {
		t.Fatalf("token create printed no token:\n%s", out)
	}
	if code, out := runCmd("user", "add", "bob", "-role", "admin", "-generate", "-config", config); code != 1 || !strings.Contains(out, "bob") {
		t.Fatalf("adding bob twice: %d\n%s", code, out)
	}

	// Running: through request files.
	srv := startServe(t, config, freePort(t))
	// Users exist already: the first start makes none.
	if n := strings.Count(srv.out.String(), "generated a status page password"); n != 0 {
		t.Fatalf("%d generated passwords:\n%s", n, srv.out)
	}
	out = must("user carol, password", "user", "add", "carol", "-role", "operator", "-generate")
	if !strings.Contains(out, "the running server") {
		t.Fatalf("user add on a running server did not go through it:\n%s", out)
	}
	must("carol now has role admin", "user", "role", "carol", "admin")
	out = must("bob", "user", "list")
	for _, want := range []string{"admin ", "bob ", "carol "} {
		if !strings.Contains(out, want) {
			t.Fatalf("user list lacks %q:\n%s", want, out)
		}
	}
	must("token deploy created", "token", "create", "-name", "deploy", "-role", "viewer")
	out = must("deploy", "token", "list")
	if !strings.Contains(out, "ci ") || !strings.Contains(out, "never") {
		t.Fatalf("token list:\n%s", out)
	}
	must("token ci revoked", "token", "revoke", "ci")
	must("user bob removed", "user", "remove", "bob")
	if code, out := runCmd("user", "remove", "nobody", "-config", config); code != 1 || !strings.Contains(out, "nobody") {
		t.Fatalf("removing no such user: %d\n%s", code, out)
	}
	out = must("carol", "user", "list")
	if strings.Contains(out, "bob ") {
		t.Fatalf("bob still listed:\n%s", out)
	}
	out = must("deploy", "token", "list")
	if strings.Contains(out, "ci ") {
		t.Fatalf("ci still listed:\n%s", out)
	}
	srv.stop()

	// After the restart (the file, read with the server stopped).
	db, err := bboltstore.Open(filepath.Join(filepath.Dir(config), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entries, err := db.Audit(context.Background(), app.AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, e := range entries {
		if !strings.HasPrefix(e.Actor, "local:") || e.Via != "cli" {
			continue
		}
		count[e.Action+" "+e.Target+" "+e.Result]++
	}
	want := map[string]int{
		app.AuditUserAdd + " bob " + app.AuditOK: 1, app.AuditUserAdd + " bob " + app.AuditFailed: 1,
		app.AuditTokenCreate + " ci " + app.AuditOK: 1, app.AuditUserAdd + " carol " + app.AuditOK: 1,
		app.AuditUserRole + " carol " + app.AuditOK: 1, app.AuditTokenCreate + " deploy " + app.AuditOK: 1,
		app.AuditTokenRevoke + " ci " + app.AuditOK: 1, app.AuditUserRemove + " bob " + app.AuditOK: 1,
		app.AuditUserRemove + " nobody " + app.AuditFailed: 1,
	}
	for k, n := range want {
		if count[k] != n {
			t.Errorf("audit %q: %d entries, want %d (all: %v)", k, count[k], n, count)
		}
	}
	if len(count) != len(want) {
		t.Errorf("audit entries by the command line: %v, want %v", count, want)
	}
}
