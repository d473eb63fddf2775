package access_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

// The config's user keeps its sessions over a restart with the same
// password (a new Service, as after a restart) and loses them when the
// password changed: its stamp is derived from the password.
func TestCurrent_ConfigPasswordStamp(t *testing.T) {
	id, ok := access.Fixed("ops", "pw-one").CheckPassword("ops", "pw-one")
	if !ok || id.Stamp == 0 {
		t.Fatalf("CheckPassword = %+v, %v; want the config's user with a stamp", id, ok)
	}
	if !access.Fixed("ops", "pw-one").Current(id) {
		t.Error("a restart with the same password ended the config user's session")
	}
	if access.Fixed("ops", "pw-two").Current(id) {
		t.Error("a restart with another password kept the config user's session")
	}
	if access.Fixed("other", "pw-one").Current(id) {
		t.Error("a restart with another user kept the config user's session")
	}
}

// Sessions over one store, as two nodes: a session works on both, ends
// at its expiry (and is then deleted, as the next login deletes other
// expired ones), and a logout on one node ends it on the other within
// SessionCache, the bound of its cache.
func TestSessions_Lifetime(t *testing.T) {
	ctx := context.Background()
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now()
	a := access.Fixed("ops", "pw-one")
	nodes := [2]*access.Sessions{access.NewSessions(db, a), access.NewSessions(db, a)}
	for _, n := range nodes {
		n.Now = func() time.Time { return now }
	}
	id, _ := a.CheckPassword("ops", "pw-one")
	find := func(n *access.Sessions, token string) bool {
		t.Helper()
		_, ok, err := n.Find(ctx, token)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	stored := func(token string) bool {
		t.Helper()
		_, ok, err := db.FindSession(ctx, app.SessionHash(token))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	old, _, err := nodes[0].Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	unseen, _, _ := nodes[0].Start(ctx, id)
	if !find(nodes[0], old) || !find(nodes[1], old) {
		t.Fatal("a new session does not hold on both nodes")
	}
	now = now.Add(app.SessionTTL)
	if find(nodes[1], old) || stored(old) {
		t.Error("a session at its expiry still holds, or is still stored")
	}
	if !stored(unseen) {
		t.Fatal("an expired session nobody looked at is gone before any login")
	}
	tok, _, err := nodes[0].Start(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if stored(unseen) {
		t.Error("a login left an expired session stored")
	}

	if !find(nodes[1], tok) { // node 1 caches it now
		t.Fatal("the session does not hold on node 1")
	}
	if err := nodes[0].End(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if find(nodes[0], tok) || stored(tok) {
		t.Error("a logged-out session still holds on its node, or is still stored")
	}
	now = now.Add(access.SessionCache)
	if find(nodes[1], tok) {
		t.Errorf("a session logged out on node 0 holds on node 1 %s later", access.SessionCache)
	}
}

// BenchmarkSessions_Find is what a request with a session cookie costs:
// from the cache, or reading the store (each look a SessionCache later).
func BenchmarkSessions_Find(b *testing.B) {
	ctx := context.Background()
	stores := map[string]func(b *testing.B) app.SessionStore{
		"bbolt": func(b *testing.B) app.SessionStore {
			db, err := bboltstore.Open(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db
		},
		"postgres": func(b *testing.B) app.SessionStore {
			db, err := postgres.Open(ctx, pgtest.URL(b), postgres.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			return db
		},
	}
	for _, name := range []string{"bbolt", "postgres"} {
		for _, cached := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/cached=%v", name, cached), func(b *testing.B) {
				a := access.Fixed("ops", "pw-one")
				ss := access.NewSessions(stores[name](b), a)
				now := time.Now()
				ss.Now = func() time.Time { return now }
				id, _ := a.CheckPassword("ops", "pw-one")
				tok, _, err := ss.Start(ctx, id)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if !cached {
						now = now.Add(access.SessionCache)
					}
					if _, ok, err := ss.Find(ctx, tok); !ok || err != nil {
						b.Fatalf("Find = %v, %v", ok, err)
					}
				}
			})
		}
	}
}
