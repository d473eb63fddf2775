package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"hookbox/app"
)

// sessionStore is what the session suites use of a store.
type sessionStore interface {
	app.SessionStore
	app.AccessStore
}

// newSession is a session of id made at T0, expiring after ttl, with the
// hash of a token made from tag.
func newSession(tag string, id app.Identity, ttl time.Duration) app.Session {
	return app.Session{Hash: app.SessionHash("token-" + tag), ID: id, Created: T0.Add(123456789 * time.Nanosecond), Expires: T0.Add(ttl)}
}

func mustCreateSession(t *testing.T, s sessionStore, ss app.Session) {
	t.Helper()
	if err := s.CreateSession(ctx, ss); err != nil {
		t.Fatalf("CreateSession(%s): %v", ss.ID.Name, err)
	}
}

// sessionHeld reports whether the session of hash is stored.
func sessionHeld(t *testing.T, s sessionStore, hash [32]byte) bool {
	t.Helper()
	_, ok, err := s.FindSession(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// testSessions: a session reads back whole (to the microsecond), its hash
// is unique, a logout deletes it, and the sweep deletes expired ones a
// bounded chunk at a time, never an unexpired one.
func testSessions(t *testing.T, open Opener) {
	var s sessionStore = open(t)
	ann := newSession("ann", app.Identity{Name: "ann", Role: app.RoleOperator, Stamp: 42}, time.Hour)
	cfg := newSession("cfg", app.Identity{Name: "admin", Role: app.RoleAdmin, Fixed: true, Stamp: 1<<63 + 5}, 2*time.Hour)
	for _, ss := range []app.Session{ann, cfg} {
		mustCreateSession(t, s, ss)
		got, ok, err := s.FindSession(ctx, ss.Hash)
		if err != nil || !ok {
			t.Fatalf("FindSession(%s) = %v, %v; want it", ss.ID.Name, ok, err)
		}
		if got.Hash != ss.Hash || got.ID != ss.ID || !got.Created.Truncate(time.Microsecond).Equal(ss.Created.Truncate(time.Microsecond)) || !got.Expires.Equal(ss.Expires) {
			t.Errorf("FindSession(%s) = %+v; want %+v", ss.ID.Name, got, ss)
		}
	}
	if err := s.CreateSession(ctx, ann); app.ErrorCode(err) != app.ECONFLICT {
		t.Errorf("CreateSession with a hash taken = %v; want %s", err, app.ECONFLICT)
	}
	if sessionHeld(t, s, app.SessionHash("token-nobody")) {
		t.Error("FindSession of a token never given found one")
	}
	if err := s.DeleteSession(ctx, ann.Hash); err != nil {
		t.Fatal(err)
	}
	if sessionHeld(t, s, ann.Hash) || !sessionHeld(t, s, cfg.Hash) {
		t.Error("DeleteSession deleted the wrong session")
	}
	if err := s.DeleteSession(ctx, ann.Hash); err != nil {
		t.Errorf("DeleteSession of no session = %v; want nil", err)
	}

	t.Run("DeleteExpired", func(t *testing.T) {
		var old []app.Session
		for i := range 3 {
			ss := newSession(fmt.Sprint("old-", i), app.Identity{Name: "ann", Role: app.RoleViewer, Stamp: 1}, time.Duration(i+1)*time.Minute)
			mustCreateSession(t, s, ss)
			old = append(old, ss)
		}
		now := T0.Add(3 * time.Minute) // the last one expires at now exactly
		var deleted []int
		for range 3 {
			n, err := s.DeleteExpiredSessions(ctx, now, 2)
			if err != nil {
				t.Fatal(err)
			}
			deleted = append(deleted, n)
		}
		if fmt.Sprint(deleted) != "[2 1 0]" {
			t.Errorf("DeleteExpiredSessions(limit 2) three times deleted %v; want [2 1 0]", deleted)
		}
		for _, ss := range old {
			if sessionHeld(t, s, ss.Hash) {
				t.Errorf("a session expired at %s is still there", ss.Expires)
			}
		}
		if !sessionHeld(t, s, cfg.Hash) {
			t.Error("the sweep deleted a session that had not expired")
		}
	})
}

// testSessionsEndWithUser: a change of a user's password or role, and
// their removal, delete that user's sessions in the same transaction, and
// no one else's (nor a session of the config's user of the same name); a
// change refused deletes none.
func testSessionsEndWithUser(t *testing.T, open Opener) {
	var s sessionStore = open(t)
	for _, u := range []string{"ann", "bob", "cid"} {
		role := app.RoleViewer
		if u == "ann" {
			role = app.RoleAdmin
		}
		if err := s.CreateUser(ctx, app.User{Name: u, Role: role, Hash: []byte("h"), Created: T0}); err != nil {
			t.Fatal(err)
		}
	}
	sessions := map[string]app.Session{}
	for _, tag := range []string{"ann-1", "ann-2", "bob", "cid"} {
		name := tag[:3]
		sessions[tag] = newSession(tag, app.Identity{Name: name, Role: app.RoleViewer, Stamp: 1}, time.Hour)
	}
	sessions["ann-config"] = newSession("ann-config", app.Identity{Name: "ann", Role: app.RoleAdmin, Fixed: true, Stamp: 7}, time.Hour)
	for _, ss := range sessions {
		mustCreateSession(t, s, ss)
	}
	held := func(t *testing.T, want ...string) {
		t.Helper()
		w := map[string]bool{}
		for _, tag := range want {
			w[tag] = true
		}
		for tag, ss := range sessions {
			if got := sessionHeld(t, s, ss.Hash); got != w[tag] {
				t.Errorf("session %s held: %v; want %v", tag, got, w[tag])
			}
		}
	}
	all := []string{"ann-1", "ann-2", "ann-config", "bob", "cid"}

	// Refused changes end nothing.
	if err := s.SetUserRole(ctx, "ann", app.RoleViewer, T0, app.KeepAdmin); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("demote the last admin = %v; want %s", err, app.ECONFLICT)
	}
	if err := s.RemoveUser(ctx, "ann", app.KeepAdmin); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("remove the last admin = %v; want %s", err, app.ECONFLICT)
	}
	if err := s.SetUserPassword(ctx, "dee", []byte("h2"), T0); app.ErrorCode(err) != app.ENOTFOUND {
		t.Fatalf("password of no user = %v; want %s", err, app.ENOTFOUND)
	}
	held(t, all...)

	if err := s.SetUserPassword(ctx, "ann", []byte("h2"), T0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	held(t, "ann-config", "bob", "cid")
	if err := s.SetUserRole(ctx, "bob", app.RoleOperator, T0.Add(time.Minute), app.KeepAdmin); err != nil {
		t.Fatal(err)
	}
	held(t, "ann-config", "cid")
	if err := s.RemoveUser(ctx, "cid", app.KeepAdmin); err != nil {
		t.Fatal(err)
	}
	held(t, "ann-config")
}

// sessionCancelled checks that the session writes honour a done ctx.
func sessionCancelled(t *testing.T, s sessionStore, done context.Context) {
	t.Helper()
	ss := newSession("cancelled", app.Identity{Name: "never", Role: app.RoleViewer}, time.Hour)
	if err := s.CreateSession(done, ss); !errors.Is(err, context.Canceled) {
		t.Errorf("CreateSession with a cancelled ctx = %v; want context.Canceled", err)
	}
	if sessionHeld(t, s, ss.Hash) {
		t.Error("a session created with a cancelled ctx is stored")
	}
	if _, err := s.DeleteExpiredSessions(done, T0.Add(48*time.Hour), 100); !errors.Is(err, context.Canceled) {
		t.Errorf("DeleteExpiredSessions with a cancelled ctx = %v; want context.Canceled", err)
	}
}
