package web_test

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres/pgtest"
)

// fakeClock is a clock a test moves.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// Issue 44: sessions are kept by the store, hashed. A session made on one
// server works on another over the same store (a restart on bbolt, a
// second node on PostgreSQL), the store holds only its token's hash, with
// its expiry; logging out deletes it, so it ends on that server at once
// and on the first one within access.SessionCache; a password change ends
// the user's sessions. On today's main the second server sent the cookie
// to the login page.
func TestSessions_StoredAndEndAtLogout(t *testing.T) {
	t.Run("Bbolt", func(t *testing.T) {
		dir := t.TempDir()
		db, err := bboltstore.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		testSessionsStored(t, db, db, func(t *testing.T, token string) {
			if raw, err := os.ReadFile(filepath.Join(dir, bboltstore.FileName)); err != nil || bytes.Contains(raw, []byte(token)) {
				t.Errorf("the data file holds the session's token itself (read: %v)", err)
			}
		})
	})
	t.Run("Postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		testSessionsStored(t, openPostgres(t, url), openPostgres(t, url), func(*testing.T, string) {})
	})
}

// testSessionsStored runs the servers A and B over dbA and dbB (one store
// seen twice); noToken checks that the store does not hold a token.
func testSessionsStored(t *testing.T, dbA, dbB storage.Store, noToken func(t *testing.T, token string)) {
	ctx := context.Background()
	db := dbA
	cfg := mustConfig(t, uiSecrets)
	clock := &fakeClock{now: time.Now()}
	serverAt := func(db storage.Store, now func() time.Time) (string, *access.Service) {
		acc := testAccess(t, cfg, db)
		srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping, Access: acc, Now: now})
		return serve(t, srv.App()), acc
	}
	addrA, accA := serverAt(dbA, clock.Now)
	addrB, _ := serverAt(dbB, time.Now)

	a := logIn(t, addrA)
	token := a.jar["hookbox_session"]
	s, ok, err := db.FindSession(ctx, app.SessionHash(token))
	if err != nil || !ok {
		t.Fatalf("the store has no session for the cookie: %v, %v", ok, err)
	}
	if s.ID.Name != "ops" || !s.Expires.Equal(s.Created.Add(app.SessionTTL)) {
		t.Errorf("stored session %+v; want ops's, expiring %s after its start", s, app.SessionTTL)
	}
	noToken(t, token)

	b := &client{t: t, base: "http://" + addrB, jar: map[string]string{"hookbox_session": token}}
	resp, page := b.do("GET", "/dead-letters", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("the cookie on another server over the same store: %d to %q; want 200", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := b.do("POST", "/logout", url.Values{"csrf": {csrfOf(t, page)}}); resp.StatusCode != 303 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if _, ok, err := db.FindSession(ctx, app.SessionHash(token)); ok || err != nil {
		t.Fatalf("the session is still stored after the logout (%v, %v)", ok, err)
	}
	b.jar["hookbox_session"] = token // the cookie kept, as a thief would
	if resp, _ := b.do("GET", "/", nil); resp.StatusCode != 303 {
		t.Errorf("the logged-out cookie on the server that logged it out: %d; want 303 to the login", resp.StatusCode)
	}
	clock.Add(access.SessionCache)
	if resp, _ := a.do("GET", "/", nil); resp.StatusCode != 303 {
		t.Errorf("the logged-out cookie on the other server %s later: %d; want 303 to the login", access.SessionCache, resp.StatusCode)
	}

	// A password change ends the user's sessions, in the store too.
	hash, err := access.HashPassword("dana-password-1")
	if err != nil {
		t.Fatal(err)
	}
	who := app.Who{Actor: "test", Via: "cli", From: "local"}
	if err := accA.AddUser(ctx, who, "dana", app.RoleViewer, hash); err != nil {
		t.Fatal(err)
	}
	d := &client{t: t, base: "http://" + addrA, jar: map[string]string{}}
	if resp, _ := d.do("POST", "/login", url.Values{"user": {"dana"}, "password": {"dana-password-1"}}); resp.StatusCode != 303 {
		t.Fatalf("dana's login: %d", resp.StatusCode)
	}
	if resp, _ := d.do("GET", "/", nil); resp.StatusCode != 200 {
		t.Fatalf("dana's session: %d", resp.StatusCode)
	}
	if err := accA.SetPassword(ctx, who, "dana", hash); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.FindSession(ctx, app.SessionHash(d.jar["hookbox_session"])); ok {
		t.Error("dana's session is still stored after her password changed")
	}
	if resp, _ := d.do("GET", "/", nil); resp.StatusCode != 303 {
		t.Errorf("dana's session after her password changed: %d; want 303 to the login", resp.StatusCode)
	}
}
