package upstream_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/upstream"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

// On PostgreSQL, two nodes share one database: a check on one takes in
// what Stripe holds, the other sees its result; while one node holds a
// source's lock, a check asked of the other does not run beside it.
func TestChecker_PostgreSQLTwoNodes(t *testing.T) {
	url := pgtest.URL(t)
	open := func() *postgres.DB {
		db, err := postgres.Open(context.Background(), url, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	a, b := open(), open()
	stripe := newFakeStripe(t, apiKey)
	r := newRigOver(t, stripeSource(stripe.URL, true), a)
	for i := range 120 {
		stripe.events = append(stripe.events, stripeEv{ID: fmt.Sprintf("evt_pg%03d", i), Type: "charge.succeeded", Created: r.now.Add(-time.Duration(i+10) * time.Minute)})
	}
	res := r.check("pay")
	if res.Fetched != 120 || res.Error != "" {
		t.Fatalf("check on node A = %+v; want 120 fetched", res)
	}
	e := r.event("pay", "evt_pg007")
	if e.Origin != app.OriginFetched {
		t.Errorf("evt_pg007 = %+v; want fetched", e)
	}
	other := upstream.New(mustConfig(t, stripeSource(stripe.URL, true)), b, nil)
	if last, err := other.LastCheck(ctx, "pay"); err != nil || last == nil || last.Fetched != 120 {
		t.Errorf("node B reads the last check = %+v, %v; want node A's", last, err)
	}
	release, ok, err := b.TryJobLock(ctx, "upstream/pay")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	calls := len(stripe.calls)
	busy, err := r.checker.CheckNow(ctx, "pay", app.Who{Actor: "admin"})
	if err != nil || len(busy) != 1 || !strings.Contains(busy[0].Error, "a check of this source is running") || len(stripe.calls) != calls {
		t.Errorf("check on A while B holds the lock = %+v, %v (calls %d → %d); want it refused, nothing called", busy, err, calls, len(stripe.calls))
	}
	release()
	if again := r.check("pay"); again.Error != "" || again.Held != 120 || again.Fetched != 0 {
		t.Errorf("check after B released = %+v; want all held", again)
	}
}
