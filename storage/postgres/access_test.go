package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"hookbox/app"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// Two nodes making sure of the first user at the same moment on a fresh
// database, 20 times: first is called exactly once each time, and both
// see the one admin.
func TestEnsureFirstUser_TwoNodes(t *testing.T) {
	for i := range 20 {
		url := pgtest.URL(t)
		nodes := []*postgres.DB{mustOpenURL(t, url, postgres.Options{}), mustOpenURL(t, url, postgres.Options{})}
		var calls atomic.Int32
		first := func() ([]byte, error) { calls.Add(1); return []byte("hash"), nil }
		start := make(chan struct{})
		var wg sync.WaitGroup
		created := make([]bool, len(nodes))
		errs := make([]error, len(nodes))
		for n, db := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				created[n], errs[n] = db.EnsureFirstUser(context.Background(), "admin", t0, first)
			}()
		}
		close(start)
		wg.Wait()
		for n, err := range errs {
			if err != nil {
				t.Fatalf("round %d node %d: %v", i, n, err)
			}
		}
		if got := calls.Load(); got != 1 || created[0] == created[1] {
			t.Fatalf("round %d: first called %d times, created %v; want once, by one node", i, got, created)
		}
		for n, db := range nodes {
			a, err := db.LoadAccess(context.Background())
			if err != nil || len(a.Users) != 1 || a.Users[0].Role != app.RoleAdmin {
				t.Fatalf("round %d node %d: users %+v, %v; want the one admin", i, n, a.Users, err)
			}
		}
	}
}

// Two nodes on one database: 50 concurrent demotions, then removals, of
// two admins by each other, spread over both nodes' pools, leave exactly
// one admin each time, and the survivor's are refused with ECONFLICT.
func TestLastAdmin_TwoNodes(t *testing.T) {
	url := pgtest.URL(t)
	a, b := mustOpenURL(t, url, postgres.Options{}), mustOpenURL(t, url, postgres.Options{})
	storetest.LastAdminRace(t, []app.AccessStore{a, b}, 50)
}
