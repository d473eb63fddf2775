package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// The PostgreSQL store keeps the hourly counts as the suite wants them;
// a restart is a new node on the same schema.
func TestDB_Counts(t *testing.T) {
	pgtest.BaseURL(t)
	storetest.RunCounts(t, func(t *testing.T) (storage.Store, func(*testing.T, storage.Store) storage.Store) {
		url := pgtest.URL(t)
		return mustOpenURL(t, url, postgres.Options{}), func(t *testing.T, s storage.Store) storage.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpenURL(t, url, postgres.Options{})
		}
	})
}

// The PostgreSQL store keeps the counts by name as the suite wants them.
func TestDB_Named(t *testing.T) {
	pgtest.BaseURL(t)
	storetest.RunNamed(t, func(t *testing.T) (storage.Store, func(*testing.T, storage.Store) storage.Store) {
		url := pgtest.URL(t)
		return mustOpenURL(t, url, postgres.Options{}), func(t *testing.T, s storage.Store) storage.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpenURL(t, url, postgres.Options{})
		}
	})
}

// The store counts what the domain's rules say, of the writes it made, and
// nothing else: given rules no store would have (accepting counts two dead
// and a route sent, an attempt three duplicates under its destination), it
// keeps exactly those, and nothing for a duplicate, for an id accepted by
// another of a group's writes, or for an attempt whose delivery is gone.
// A count computed in SQL (the received and accepted that acceptSQL once
// counted itself) or a change of a write that did not happen fails it.
func TestDB_CountsWhatTheDomainSays(t *testing.T) {
	pgtest.BaseURL(t)
	postgres.SetCountRules(t,
		func(c *app.CountDelta, e *app.Event, plan *app.Plan) {
			c.Kinds = append(c.Kinds, app.KindDelta{At: e.ReceivedAt, Kind: app.KindDead, N: 2})
			c.Named = append(c.Named, app.NamedDelta{At: e.ReceivedAt, Kind: app.RouteSent, Name: "from " + e.Source, N: uint64(1 + len(plan.Unkeyed))})
			c.Lasts = append(c.Lasts, app.LastNote{Kind: app.DestFailed, Name: e.ID, Last: app.Last{At: e.ReceivedAt, Text: "accepted " + e.ID}})
		},
		func(c *app.CountDelta, dest string, a *app.Attempt, state app.DeliveryState, end time.Time) {
			c.Kinds = append(c.Kinds, app.KindDelta{At: end, Kind: app.KindDuplicate, N: 3})
			c.Named = append(c.Named, app.NamedDelta{At: end, Kind: app.SourceInvalid, Name: dest, N: uint64(state)})
			c.Lasts = append(c.Lasts, app.LastNote{Kind: app.SourceAccepted, Name: dest, Last: app.Last{At: end, Text: a.Error}})
		})
	s := mustOpenURL(t, pgtest.URL(t), postgres.Options{})
	ctx := context.Background()
	at := storetest.T0.Add(10 * time.Minute)
	accept := func(id string, at time.Time, plan *app.Plan) bool {
		t.Helper()
		dup, err := s.Accept(ctx, storetest.NewEvent("shop", id, at), at.Add(time.Hour), plan)
		if err != nil {
			t.Fatal(err)
		}
		return dup
	}
	if accept("a1", at, &app.Plan{Direct: app.DirectTo("pos")}) {
		t.Fatal("a1: duplicate")
	}
	if !accept("a1", at.Add(time.Second), &app.Plan{Direct: app.DirectTo("pos")}) {
		t.Fatal("a1 again: not a duplicate")
	}
	// An unkeyed route takes the transaction with debounce steps.
	if accept("a2", at.Add(2*time.Second), &app.Plan{Direct: app.DirectTo("pos"), Unkeyed: []string{"u"}}) {
		t.Fatal("a2: duplicate")
	}
	// Eight writes of one id at once, most of them in one group: one counts.
	var dups atomic.Int32
	storetest.InParallel(t, 8, func(int) error {
		dup, err := s.Accept(ctx, storetest.NewEvent("shop", "a3", at.Add(3*time.Second)), at.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")})
		if dup {
			dups.Add(1)
		}
		return err
	})
	if got := dups.Load(); got != 7 {
		t.Fatalf("a3: %d duplicates of 8, want 7", got)
	}

	work, _, err := s.DueDeliveries(ctx, "pos", at.Add(time.Minute), 10, storetest.Never)
	if err != nil || len(work) != 3 {
		t.Fatalf("DueDeliveries = %d, %v; want 3", len(work), err)
	}
	start := at.Add(2 * time.Minute)
	attempt := func(i int, status int) *app.Attempt {
		return &app.Attempt{Start: start.Add(time.Duration(i) * time.Second), Duration: time.Millisecond, Status: status, Error: fmt.Sprint("try ", i)}
	}
	recs := []app.AttemptRecord{
		{ID: work[0].Delivery.ID, Attempt: attempt(0, 500), State: app.Pending, Due: start.Add(time.Hour)},
		{ID: work[1].Delivery.ID, Attempt: attempt(1, 200), State: app.Delivered},
		{ID: work[0].Delivery.ID, Attempt: attempt(2, 410), State: app.Dead}, // a second round
		{ID: 1 << 40, Attempt: attempt(3, 200), State: app.Delivered},        // no such delivery
	}
	errs := s.RecordAttempts(ctx, recs)
	for i, err := range errs[:3] {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if !errors.Is(errs[3], app.ErrNotFound) {
		t.Fatalf("record of a delivery that is not there: %v, want ErrNotFound", errs[3])
	}

	hours, err := s.HourlyCounts(ctx, storetest.T0.Add(-time.Hour), storetest.T0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var want app.Counts
	want[app.KindDead], want[app.KindDuplicate] = 3*2, 3*3
	if len(hours) != 1 || !hours[0].Hour.Equal(storetest.T0) || hours[0].Counts != want {
		t.Fatalf("hourly counts %+v, want %v in the hour of %v only", hours, want, storetest.T0)
	}
	named, err := s.NamedCounts(ctx, storetest.T0, storetest.T0)
	if err != nil {
		t.Fatal(err)
	}
	wantNamed := map[app.Named]uint64{
		{Kind: app.RouteSent, Name: "from shop"}: 1 + 2 + 1,
		{Kind: app.SourceInvalid, Name: "pos"}:   uint64(app.Pending + app.Delivered + app.Dead),
	}
	if !maps.Equal(named, wantNamed) {
		t.Fatalf("counts by name %v, want %v", named, wantNamed)
	}
	lasts, err := s.Lasts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := func(at time.Time, text string) app.Last { return app.Last{At: at, Text: text} }
	wantLasts := map[app.Named]app.Last{
		{Kind: app.DestFailed, Name: "a1"}:      last(at, "accepted a1"),
		{Kind: app.DestFailed, Name: "a2"}:      last(at.Add(2*time.Second), "accepted a2"),
		{Kind: app.DestFailed, Name: "a3"}:      last(at.Add(3*time.Second), "accepted a3"),
		{Kind: app.SourceAccepted, Name: "pos"}: last(start.Add(2*time.Second+time.Millisecond), "try 2"),
	}
	if len(lasts) != len(wantLasts) {
		t.Fatalf("lasts %v, want %v", lasts, wantLasts)
	}
	for k, w := range wantLasts {
		if g, ok := lasts[k]; !ok || !g.At.Equal(w.At) || g.Text != w.Text {
			t.Fatalf("last of %v: %+v, want %+v (all: %v)", k, g, w, lasts)
		}
	}
}
