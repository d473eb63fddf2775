// Package storetest is the conformance suite of hookbox's stores: the
// behaviour the app relies on, which the bbolt store (bboltstore.DB) and the
// PostgreSQL store (storage/postgres) must both show. A store's tests call
// Run with a function that opens a fresh, empty store.
//
// Every time is given to the store by the test (the clock is injected), so
// the suite never sleeps to make time pass.
package storetest

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// Opener opens a fresh, empty store for t and closes it when t ends
// (closing it twice must be harmless).
type Opener func(t *testing.T) storage.Store

// T0 is the suite's start of time.
var T0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// NewEvent returns an event of source with id received at at, with two
// headers and a body that a re-encoding would change.
func NewEvent(source, id string, at time.Time) *app.Event {
	return &app.Event{
		Source: source, ID: id, Topic: "orders/create", ReceivedAt: at,
		Header: []app.HeaderField{{Name: "X-Shopify-Topic", Value: "orders/create"}, {Name: "Content-Type", Value: "application/json"}},
		Body:   []byte(`{"id": 1, "note": "a/b & <c>"}` + "\n"),
	}
}

// Never is a skip function that skips nothing.
func Never(uint64) bool { return false }

// Run runs the whole suite against the stores open gives; damage breaks
// their records for the tests of faults.
func Run(t *testing.T, open Opener, damage Damage) {
	t.Run("Accept", func(t *testing.T) { testAccept(t, open) })
	t.Run("AcceptConcurrentSameID", func(t *testing.T) { testAcceptConcurrent(t, open) })
	t.Run("AcceptAtomic", func(t *testing.T) { testAcceptAtomic(t, open) })
	t.Run("AcceptFailsAlone", func(t *testing.T) { testAcceptFailsAlone(t, open) })
	t.Run("OnOpened", func(t *testing.T) { testOnOpened(t, open) })
	t.Run("Outbox", func(t *testing.T) { testOutbox(t, open) })
	t.Run("DueOrderAndLimit", func(t *testing.T) { testDueOrder(t, open) })
	t.Run("RecordAttempts", func(t *testing.T) { testRecordAttempts(t, open) })
	t.Run("ProbeAttempt", func(t *testing.T) { testProbeAttempt(t, open) })
	t.Run("ReplayDelivered", func(t *testing.T) { testReplayDelivered(t, open) })
	t.Run("RetryNow", func(t *testing.T) { testRetryNow(t, open) })
	t.Run("ReplayQuery", func(t *testing.T) { testReplayQuery(t, open) })
	t.Run("ReplayDryRunAgrees", func(t *testing.T) { testReplayDryRunAgrees(t, open) })
	t.Run("AttemptOfAnyBytes", func(t *testing.T) { testAttemptAnyBytes(t, open) })
	t.Run("DeleteEventsBefore", func(t *testing.T) { testDeleteEventsBefore(t, open) })
	t.Run("DeleteEventsBeforeKeepsUndelivered", func(t *testing.T) { testDeleteKeepsUndelivered(t, open) })
	t.Run("ForgetExpiredIDs", func(t *testing.T) { testForgetExpiredIDs(t, open) })
	t.Run("SweepRacesReplayAndFire", func(t *testing.T) { testSweepRaces(t, open) })
	t.Run("Debounce", func(t *testing.T) { testDebounce(t, open) })
	t.Run("CarriedBy", func(t *testing.T) { testCarriedBy(t, open) })
	t.Run("DebounceConcurrentSameKey", func(t *testing.T) { testDebounceConcurrent(t, open) })
	t.Run("PruneWindows", func(t *testing.T) { testPruneWindows(t, open) })
	t.Run("ListEvents", func(t *testing.T) { testListEvents(t, open) })
	t.Run("EventsAfter", func(t *testing.T) { testEventsAfter(t, open) })
	t.Run("ListEventsStatus", func(t *testing.T) { testListEventsStatus(t, open) })
	t.Run("EventStateWords", func(t *testing.T) { testEventStateWords(t, open) })
	t.Run("Search", func(t *testing.T) { testSearch(t, open) })
	t.Run("SearchBounds", func(t *testing.T) { testSearchBounds(t, open) })
	t.Run("DeadLetters", func(t *testing.T) { testDeadLetters(t, open) })
	t.Run("Meta", func(t *testing.T) { testMeta(t, open) })
	t.Run("JobLock", func(t *testing.T) { testJobLock(t, open) })
	t.Run("Origin", func(t *testing.T) { testOrigin(t, open) })
	t.Run("Quarantine", func(t *testing.T) { testQuarantine(t, open) })
	t.Run("Controls", func(t *testing.T) { testControls(t, open) })
	t.Run("Health", func(t *testing.T) { testHealth(t, open) })
	t.Run("Filtered", func(t *testing.T) { testFiltered(t, open) })
	t.Run("OrderHeld", func(t *testing.T) { testOrderHeld(t, open) })
	t.Run("OrderKeyBytes", func(t *testing.T) { testOrderKeyBytes(t, open) })
	t.Run("OrderDebounce", func(t *testing.T) { testOrderDebounce(t, open) })
	t.Run("Users", func(t *testing.T) { testUsers(t, open) })
	t.Run("Tokens", func(t *testing.T) { testTokens(t, open) })
	t.Run("EnsureFirstUser", func(t *testing.T) { testEnsureFirstUser(t, open) })
	t.Run("LastAdminConcurrent", func(t *testing.T) { testLastAdminConcurrent(t, open) })
	t.Run("Audit", func(t *testing.T) { testAudit(t, open) })
	t.Run("Sessions", func(t *testing.T) { testSessions(t, open) })
	t.Run("SessionsEndWithUser", func(t *testing.T) { testSessionsEndWithUser(t, open) })
	t.Run("Cancelled", func(t *testing.T) { testCancelled(t, open) })
	runFaults(t, open, damage)
}

var ctx = context.Background()

// mustAccept accepts e and fails t on an error or a duplicate.
func mustAccept(t *testing.T, s storage.Store, e *app.Event, plan *app.Plan) {
	t.Helper()
	dup, err := s.Accept(ctx, e, e.ReceivedAt.Add(time.Hour), plan)
	if err != nil || dup {
		t.Fatalf("Accept %s/%s = %v, %v; want accepted", e.Source, e.ID, dup, err)
	}
	if e.Seq == 0 {
		t.Fatalf("Accept %s/%s: no seq assigned", e.Source, e.ID)
	}
	// What the tests do next (the dispatcher's and the sweep's reads, a
	// debounce step's Result) sees the event once the store applied it.
	settled(t, s)
}

// deliveries returns event seq's deliveries, failing t unless there are n.
func deliveries(t *testing.T, s storage.Store, seq uint64, n int) []*app.Delivery {
	t.Helper()
	ds, err := s.EventDeliveries(ctx, seq)
	if err != nil || len(ds) != n {
		t.Fatalf("EventDeliveries(%d) = %d deliveries (%+v), %v; want %d", seq, len(ds), ds, err, n)
	}
	return ds
}

// acceptRouted accepts event id at T0 with a delivery to each of dests and
// returns it and its deliveries in id order (the order of dests).
func acceptRouted(t *testing.T, s storage.Store, id string, dests ...string) (*app.Event, []*app.Delivery) {
	t.Helper()
	e := NewEvent("shop", id, T0)
	mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo(dests...)})
	ds := deliveries(t, s, e.Seq, len(dests))
	slices.SortFunc(ds, func(a, b *app.Delivery) int { return cmp.Compare(a.ID, b.ID) })
	return e, ds
}

// record records one attempt and fails t on an error.
func record(t *testing.T, s storage.Store, id uint64, a *app.Attempt, state app.DeliveryState, due time.Time) {
	t.Helper()
	if err := s.RecordAttempts(ctx, []app.AttemptRecord{{ID: id, Attempt: a, State: state, Due: due}})[0]; err != nil {
		t.Fatalf("RecordAttempts(%d): %v", id, err)
	}
}

// settled returns once s has applied what it acknowledged. The bbolt
// store applies an event right behind the answer (its intake log):
// the reads of a person (the pages, the API) wait for it; the
// dispatcher's and the sweep's do not (the commit that applies it wakes
// the dispatcher), nor is a debounce step's Result set before. Counts is
// a read of the first kind.
func settled(t *testing.T, s storage.Store) {
	t.Helper()
	counts(t, s)
}

func counts(t *testing.T, s storage.Store) (ids, events int) {
	t.Helper()
	ids, events, err := s.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ids, events
}

// InParallel calls f(1) … f(n) from 64 goroutines, so that group commit
// keeps a fill quick; a goroutine stops at its first error, which fails tb.
func InParallel(tb testing.TB, n int, f func(i int) error) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 64 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if err := f(i); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
