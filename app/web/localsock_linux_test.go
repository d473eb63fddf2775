package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/web"
)

// unixClient is an HTTP client whose every request goes to the Unix
// socket at path, whatever the URL's host.
func unixClient(path string) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}}
}

// serveLocal serves f's server on a Unix socket too and returns a client
// of it.
func serveLocal(t *testing.T, f *fixture) *http.Client {
	t.Helper()
	path := filepath.Join(t.TempDir(), "hookbox.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	go f.srv.ServeLocal(ln)
	return unixClient(path)
}

// On the local socket the kernel names the caller: a request with no
// credential is the admin local:<unix user> (this test's user), no CSRF
// token or Origin check stands in its way, its actions are in the audit
// log under that name, via socket, from local. The socket serves the admin
// API only: the pages and the webhooks are not there.
func TestLocalSocket_PeerIsAdmin(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	f.fill()
	c := serveLocal(t, f)
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	want := "local:" + me.Username

	resp, err := c.Get("http://local/api/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/stats on the socket, no credential: %d; want 200", resp.StatusCode)
	}

	// A state change that names another site as its origin: over TCP
	// with Basic auth it is refused; on the socket no browser could have
	// sent it.
	req, _ := http.NewRequest(http.MethodPost, "http://local/api/v1/destinations/pos/pause", strings.NewReader(`{"reason": "by the box"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", "https://evil.example")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("pause on the socket: %d %s", resp.StatusCode, body)
	}

	// An admin's route: the users.
	resp, err = c.Get("http://local/api/v1/users")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/users on the socket: %d; want 200 (an admin)", resp.StatusCode)
	}

	for _, r := range []struct{ method, path string }{{"GET", "/"}, {"GET", "/events"}, {"POST", "/in/shop"}, {"GET", "/login"}} {
		req, _ := http.NewRequest(r.method, "http://local"+r.path, strings.NewReader("{}"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "admin API") {
			t.Errorf("%s %s on the socket: %d %s; want 404 naming the admin API", r.method, r.path, resp.StatusCode, body)
		}
	}

	// Over TCP, the same request without a credential is nobody's.
	resp, err = http.Get(f.base + "/api/v1/stats")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /api/v1/stats over TCP, no credential: %d; want 401", resp.StatusCode)
	}

	entries, err := f.srv.Access().Audit(context.Background(), app.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var pause *app.AuditEntry
	for i, e := range entries {
		if e.Action == app.AuditPause {
			pause = &entries[i]
		}
	}
	if pause == nil || pause.Actor != want || pause.Via != "socket" || pause.From != "local" || pause.Target != "pos" {
		t.Fatalf("the pause's audit entry: %+v; want actor %s via socket from local", pause, want)
	}
	resp, err = c.Get("http://local/api/v1/destinations")
	if err != nil {
		t.Fatal(err)
	}
	var dests struct {
		Destinations []struct {
			Name     string `json:"name"`
			Paused   bool   `json:"paused"`
			PausedBy string `json:"paused_by"`
		} `json:"destinations"`
	}
	json.NewDecoder(resp.Body).Decode(&dests)
	resp.Body.Close()
	paused := false
	for _, d := range dests.Destinations {
		paused = paused || d.Name == "pos" && d.Paused
	}
	if !paused {
		t.Fatalf("pos is not paused: %+v", dests)
	}
}

// A uid with no name in the user database is named by its number; the
// identity of a local peer holds for as long as its connection (a stream
// on the socket is not ended for want of a stored user).
func TestLocalPeer_Identity(t *testing.T) {
	const uid = 2147483600 // no user has it
	if _, err := user.LookupId("2147483600"); err == nil {
		t.Skip("the test's uid has a user here")
	}
	p := web.LookupPeer(uid)
	if got, want := p.Actor(), "local:uid:2147483600"; got != want {
		t.Fatalf("actor %q; want %q", got, want)
	}
	root := web.LookupPeer(0)
	id := root.Identity()
	if id.Name != "local:root" || id.Role != app.RoleAdmin || !id.Local || id.Token {
		t.Fatalf("uid 0: %+v; want the admin local:root", id)
	}
	f := openFixture(t, t.TempDir(), time.Now().UTC(), nil)
	if !f.srv.Access().Current(id) {
		t.Fatal("a local identity does not hold")
	}
}
