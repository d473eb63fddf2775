package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/storage/postgres/pgtest"
)

// revokeDeadline is how long a test waits for a stream to end after its
// caller's credential changed: the bound is 1 s (AccessPoll on another
// node, at once on the same one); 5 s keeps a busy machine under -race
// from failing it, and each test logs what it measured.
const revokeDeadline = 5 * time.Second

// streamAs opens a stream at base whose request auth sets.
func streamAs(t *testing.T, base string, auth func(*http.Request)) *sseStream {
	t.Helper()
	req, _ := http.NewRequest("GET", base+"/api/v1/stream", nil)
	auth(req)
	res, err := http.DefaultClient.Do(req)
	s := readStream(t, res, err)
	s.notice(t, app.StreamNoticeReady)
	return s
}

// waitRevoked waits until s gets the revoked notice and ends, failing t
// past revokeDeadline; it returns how long that took from start.
func waitRevoked(t *testing.T, s *sseStream, start time.Time, want string) time.Duration {
	t.Helper()
	deadline := time.After(time.Until(start.Add(revokeDeadline)))
	var notice *app.StreamNotice
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				took := time.Since(start)
				if notice == nil {
					t.Fatalf("the stream ended after %s without a revoked notice", took)
				}
				return took
			}
			if m.event == "notice" && strings.Contains(m.data, `"kind":"revoked"`) {
				notice = &app.StreamNotice{Message: m.data}
				if !strings.Contains(m.data, want) {
					t.Errorf("revoked notice %s; want it to say %q", m.data, want)
				}
				continue
			}
			if m.event != ":" && m.event != "event" {
				t.Fatalf("got %+v; want the revoked notice", m)
			}
		case <-deadline:
			t.Fatalf("the stream goes on %s after its caller's credential changed (notice: %v)", revokeDeadline, notice != nil)
		}
	}
}

// Each change of a caller's credential ends that caller's stream at once,
// with a revoked notice that says why, and no other caller's: revoking a
// token, a token's expiry, removing a user, changing a user's role (any
// change ends its sessions, as it does on the pages) or its password. On
// today's main the stream went on until its next ping (15 s).
func TestStream_RevokedCallerEnds(t *testing.T) {
	ctx := context.Background()
	n := startStreamNode(t, openBolt(t))
	who := app.Who{Actor: "test", Via: "cli", From: "local"}
	const pw = "stream-password-1"
	hash, err := access.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	user := func(name string) func() func(*http.Request) {
		return func() func(*http.Request) {
			if err := n.acc.AddUser(ctx, who, name, app.RoleViewer, hash); err != nil {
				t.Fatal(err)
			}
			return func(r *http.Request) { r.SetBasicAuth(name, pw) }
		}
	}
	token := func(name string, ttl time.Duration) func() func(*http.Request) {
		return func() func(*http.Request) {
			secret, err := n.acc.CreateToken(ctx, who, name, app.RoleViewer, ttl)
			if err != nil {
				t.Fatal(err)
			}
			return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secret) }
		}
	}
	bystander := streamAs(t, n.base, token("bystander", 0)())
	for _, tt := range []struct {
		name   string
		auth   func() func(*http.Request) // makes the caller
		change func() error
		want   string
	}{
		{"TokenRevoked", token("laptop", 0), func() error { return n.acc.RevokeToken(ctx, who, "laptop") }, "the token laptop was revoked"},
		{"UserRemoved", user("gone"), func() error { return n.acc.RemoveUser(ctx, who, "gone") }, "the user gone was removed"},
		{"RoleChanged", user("promoted"), func() error { return n.acc.SetRole(ctx, who, "promoted", app.RoleOperator) }, "role or password changed"},
		{"PasswordChanged", user("changed"), func() error { return n.acc.SetPassword(ctx, who, "changed", hash) }, "role or password changed"},
		{"TokenExpired", token("brief", 3*time.Second), func() error { return nil }, "the token brief expired"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := streamAs(t, n.base, tt.auth())
			start := time.Now()
			if tt.name == "TokenExpired" {
				start = time.Now().Add(time.Until(n.acc.Tokens()[0].Expires)) // the first by name: "brief"
			}
			if err := tt.change(); err != nil {
				t.Fatal(err)
			}
			took := waitRevoked(t, s, start, tt.want)
			t.Logf("%s: the stream ended %s after the change", tt.name, took.Round(time.Millisecond))
		})
	}
	sendTo(t, n.base, "after", "orders/create", []byte(`{"after":1}`))
	if e := bystander.event(t); e.ID != "after" {
		t.Fatalf("the bystander's stream: %+v; want the event after", e)
	}
}

// Two PostgreSQL nodes: a token revoked on node A ends its stream on node
// B within AccessPoll (B reads the change through Access.Watch), with the
// revoked notice.
func TestStream_RevokedOnOtherNode(t *testing.T) {
	url := pgtest.URL(t)
	a := startStreamNode(t, openPostgres(t, url))
	b := startStreamNode(t, openPostgres(t, url))
	ctx := context.Background()
	who := app.Who{Actor: "test", Via: "cli", From: "local"}
	secret, err := a.acc.CreateToken(ctx, who, "laptop", app.RoleViewer, 0)
	if err != nil {
		t.Fatal(err)
	}
	s := streamAs(t, b.base, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secret) })
	start := time.Now()
	if err := a.acc.RevokeToken(ctx, who, "laptop"); err != nil {
		t.Fatal(err)
	}
	took := waitRevoked(t, s, start, "the token laptop was revoked")
	t.Logf("a token revoked on node A ended its stream on node B %s later (AccessPoll %s)", took.Round(time.Millisecond), access.Poll)
}

// Issue 44: a stream opened with a session cookie ends when that session
// ends: logged out (the session deleted from the store, looked at every
// access.SessionCache), or its user's password changed (at once), with
// the revoked notice. On today's main a logout left the stream running.
func TestStream_SessionEnds(t *testing.T) {
	ctx := context.Background()
	n := startStreamNode(t, openBolt(t))
	who := app.Who{Actor: "test", Via: "cli", From: "local"}
	hash, err := access.HashPassword("stream-password-1")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.acc.AddUser(ctx, who, "dana", app.RoleViewer, hash); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, user, password string
		end                  func(c *client) error
		want                 string
	}{
		{"LoggedOut", "ops", "pw-1234", func(c *client) error {
			_, page := c.do("GET", "/", nil)
			if resp, _ := c.do("POST", "/logout", url.Values{"csrf": {csrfOf(t, page)}}); resp.StatusCode != 303 {
				return fmt.Errorf("logout: %d", resp.StatusCode)
			}
			return nil
		}, "logged out"},
		{"PasswordChanged", "dana", "stream-password-1", func(*client) error { return n.acc.SetPassword(ctx, who, "dana", hash) }, "role or password changed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &client{t: t, base: n.base, jar: map[string]string{}}
			if resp, _ := c.do("POST", "/login", url.Values{"user": {tt.user}, "password": {tt.password}}); resp.StatusCode != 303 {
				t.Fatalf("login: %d", resp.StatusCode)
			}
			cookie := c.jar["hookbox_session"]
			s := streamAs(t, n.base, func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "hookbox_session", Value: cookie}) })
			start := time.Now()
			if err := tt.end(c); err != nil {
				t.Fatal(err)
			}
			took := waitRevoked(t, s, start, tt.want)
			t.Logf("%s: the session's stream ended %s after (access.SessionCache %s)", tt.name, took.Round(time.Millisecond), access.SessionCache)
		})
	}
}
