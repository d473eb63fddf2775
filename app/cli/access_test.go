package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/apptest"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

var tokenLine = regexp.MustCompile(`(?m)^(hbx_\S+)$`)

// TestUserToken_Bbolt: user and token commands on a stopped bbolt server
// (straight into the file) and a running one (request files the server
// answers), each change audited once as local:USER via cli, kept over a
// restart.
func TestUserToken(t *testing.T) {
	t.Parallel() // command after command: it waits on them, measures nothing
	t.Run("bbolt", func(t *testing.T) { testUserToken(t, "") })
	t.Run("postgres", func(t *testing.T) { testUserToken(t, pgtest.URL(t)) })
}

// bearerStatus answers GET /api/v1/stats with the token's status code.
func bearerStatus(t *testing.T, addr, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/stats", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// userStatus answers GET /api/v1/stats as user with password.
func userStatus(t *testing.T, addr, user, password string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/stats", nil)
	req.SetBasicAuth(user, password)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

var generatedLine = regexp.MustCompile(`user (\S+), password (\S+) \(shown`)

func testUserToken(t *testing.T, url string) {
	extra := ""
	if url != "" {
		extra = fmt.Sprintf("\n[storage]\nbackend = \"postgres\"\nurl = %q\n", url)
	}
	config := writeTestConfig(t, "", extra)
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
	ciToken := tokenLine.FindStringSubmatch(out)[1]
	if code, out := runCmd("user", "add", "bob", "-role", "admin", "-generate", "-config", config); code != 1 || !strings.Contains(out, "bob") {
		t.Fatalf("adding bob twice: %d\n%s", code, out)
	}

	// Running: through request files.
	addr := freePort(t)
	srv := startServe(t, config, addr)
	// Users exist already: the first start makes none.
	if n := strings.Count(srv.out.String(), "generated a status page password"); n != 0 {
		t.Fatalf("%d generated passwords:\n%s", n, srv.out)
	}
	out = must("user carol, password", "user", "add", "carol", "-role", "operator", "-generate")
	if url == "" && !strings.Contains(out, "the running server") {
		t.Fatalf("user add on a running server did not go through it:\n%s", out)
	}
	carolPw := generatedLine.FindStringSubmatch(out)[2]
	if got := userStatus(t, addr, "bob", "bob-password-1"); got != http.StatusOK {
		t.Fatalf("bob (viewer) reading stats: %d", got)
	}
	if got := bearerStatus(t, addr, ciToken); got != http.StatusOK {
		t.Fatalf("token ci reading stats: %d", got)
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
	waitStatus := func(what string, f func() int, want int) {
		t.Helper()
		apptest.Until(t, 2*access.Poll, func() error { // within two polls: the bound is part of the test
			if got := f(); got != want {
				return fmt.Errorf("%s: %d, want %d", what, got, want)
			}
			return nil
		})
	}
	waitStatus("carol (operator) reading stats", func() int { return userStatus(t, addr, "carol", carolPw) }, http.StatusOK)
	must("token ci revoked", "token", "revoke", "ci")
	waitStatus("the revoked token", func() int { return bearerStatus(t, addr, ciToken) }, http.StatusUnauthorized)
	must("user bob removed", "user", "remove", "bob")
	waitStatus("removed bob", func() int { return userStatus(t, addr, "bob", "bob-password-1") }, http.StatusUnauthorized)
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
	var db app.AuditStore
	if url == "" {
		b, err := bboltstore.Open(filepath.Join(filepath.Dir(config), "data"))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		db = b
	} else {
		p, err := postgres.Open(context.Background(), url, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		db = p
	}
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

// TestPasswd_NameEndsSessions: hookbox passwd NAME on a running server
// ends the old password's cached credential within a second, and the new
// one logs in.
func TestPasswd_NameEndsSessions(t *testing.T) {
	config := writeTestConfig(t, "", "")
	addr := freePort(t)
	startServe(t, config, addr)
	pipeStdin(t, "dana-password-1\n")
	if code, out := runCmd("user", "add", "dana", "-role", "operator", "-config", config); code != 0 {
		t.Fatalf("user add: %d\n%s", code, out)
	}
	if got := userStatus(t, addr, "dana", "dana-password-1"); got != http.StatusOK {
		t.Fatalf("dana's first login: %d", got)
	}
	pipeStdin(t, "dana-password-2\n")
	code, out := runCmd("passwd", "dana", "-config", config)
	if code != 0 || !strings.Contains(out, "password of dana changed") {
		t.Fatalf("passwd dana: %d\n%s", code, out)
	}
	apptest.Eventually(t, time.Second, "the old password refused within a second of passwd", func() bool {
		return userStatus(t, addr, "dana", "dana-password-1") == http.StatusUnauthorized
	})
	if got := userStatus(t, addr, "dana", "dana-password-2"); got != http.StatusOK {
		t.Fatalf("dana's new password: %d", got)
	}
}

// TestCLIIdentity_TwoNodes: on two PostgreSQL nodes, pause through node A
// with HOOKBOX_TOKEN (an operator token) is in node B's GET /api/v1/audit
// as token:ops; a viewer token's pause is refused with the server's
// sentence and the error names the credential, never its value.
func TestCLIIdentity_TwoNodes(t *testing.T) {
	url := pgtest.URL(t)
	sink := "http://127.0.0.1:1/"
	config := writeTestConfig(t, sink, fmt.Sprintf("\n[status]\npassword = \"the admin password\"\n[storage]\nbackend = \"postgres\"\nurl = %q\n", url))
	a := startServe(t, config, freePort(t))
	b := startServe(t, config, freePort(t))
	token := func(name, role string) string {
		code, out := runCmd("token", "create", "-name", name, "-role", role, "-config", config)
		if code != 0 {
			t.Fatalf("token create %s: %d\n%s", name, code, out)
		}
		return tokenLine.FindStringSubmatch(out)[1]
	}
	ops, viewer := token("ops", "operator"), token("look", "viewer")
	// The nodes take the new tokens up within AccessPoll.
	apptest.Eventually(t, 2*time.Second, "the nodes taking up the new tokens", func() bool {
		for _, s := range []*running{a, b} {
			if bearerStatus(t, s.addr, viewer) != http.StatusOK || bearerStatus(t, s.addr, ops) != http.StatusOK {
				return false
			}
		}
		return true
	})

	t.Setenv("HOOKBOX_TOKEN", viewer)
	code, out := runCmd("pause", "-config", config, "-listen", a.addr, "sink")
	if code != 1 || !strings.Contains(out, "403") || !strings.Contains(out, "HOOKBOX_TOKEN") || strings.Contains(out, viewer) {
		t.Fatalf("pause with a viewer token: %d\n%s", code, out)
	}
	t.Setenv("HOOKBOX_TOKEN", ops)
	if code, out := runCmd("pause", "-config", config, "-listen", a.addr, "sink"); code != 0 {
		t.Fatalf("pause with an operator token: %d\n%s", code, out)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+b.addr+"/api/v1/audit?actor=token:ops", nil)
	req.SetBasicAuth("admin", "the admin password")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Items []struct {
			Actor  string `json:"actor"`
			Action string `json:"action"`
			Result string `json:"result"`
		} `json:"items"`
	}
	err = json.NewDecoder(resp.Body).Decode(&page)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("node B's audit: %d %v", resp.StatusCode, err)
	}
	if len(page.Items) != 1 || page.Items[0].Action != app.AuditPause || page.Items[0].Result != app.AuditOK {
		t.Fatalf("node B's audit of token:ops: %+v", page.Items)
	}
}

// TestAccess_HelpSaysRolesFromTable: user -h and token -h say what each
// role may, from app's table of roles (every action named, under its own
// role), and listen -h the role streaming needs; nothing the command line
// says of roles is written again here.
func TestAccess_HelpSaysRolesFromTable(t *testing.T) {
	for _, cmd := range []string{"user", "token"} {
		var out, errOut strings.Builder
		if code := Run(context.Background(), []string{cmd, "-h"}, &out, &errOut); code != 0 {
			t.Fatalf("%s -h: exit %d %s", cmd, code, errOut.String())
		}
		help := strings.Join(strings.Fields(out.String()), " ")
		for _, a := range app.Actions() {
			r, _ := a.Rule()
			head := map[app.Role]string{app.RoleViewer: "viewer may", app.RoleOperator: "operator may also", app.RoleAdmin: "admin may also"}[r.Role]
			if r.UserOnly {
				head = "an admin user (never a token) may also"
			}
			i, j := strings.Index(help, head), strings.Index(help, r.Doing)
			if i < 0 || j < i {
				t.Errorf("%s -h does not say that %q may %s:\n%s", cmd, head, r.Doing, out.String())
			}
		}
	}
	// The commands that call the admin API say the role they need.
	for cmd, role := range map[string]app.Role{"replay": app.ActReplayQuery.Role(), "retry": app.ActRetry.Role(),
		"pause": app.ActPause.Role(), "resume": app.ActResume.Role(), "backup": app.ActDownloadBackup.Role()} {
		var out, errOut strings.Builder
		Run(context.Background(), []string{cmd, "-h"}, &out, &errOut)
		if want := "It needs the " + role.String() + " role"; !strings.Contains(out.String(), want) {
			t.Errorf("%s -h does not say %q:\n%s", cmd, want, out.String())
		}
	}
	var out, errOut strings.Builder
	Run(context.Background(), []string{"listen", "-h"}, &out, &errOut)
	if want := app.ActStream.Role().String() + " is enough"; !strings.Contains(out.String(), want) {
		t.Errorf("listen -h does not say %q:\n%s", want, out.String())
	}
}
