// Package storetest is the conformance suite of hookbox's stores: the
// behaviour the app relies on, which the bbolt store (storage.DB) and the
// PostgreSQL store (storage/postgres) must both show. A store's tests call
// Run with a function that opens a fresh, empty store.
//
// Every time is given to the store by the test (the clock is injected), so
// the suite never sleeps to make time pass.
package storetest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	t.Run("ReplayDelivered", func(t *testing.T) { testReplayDelivered(t, open) })
	t.Run("AttemptOfAnyBytes", func(t *testing.T) { testAttemptAnyBytes(t, open) })
	t.Run("DeleteEventsBefore", func(t *testing.T) { testDeleteEventsBefore(t, open) })
	t.Run("DeleteEventsBeforeKeepsUndelivered", func(t *testing.T) { testDeleteKeepsUndelivered(t, open) })
	t.Run("ForgetExpiredIDs", func(t *testing.T) { testForgetExpiredIDs(t, open) })
	t.Run("SweepRacesReplayAndFire", func(t *testing.T) { testSweepRaces(t, open) })
	t.Run("Debounce", func(t *testing.T) { testDebounce(t, open) })
	t.Run("DebounceConcurrentSameKey", func(t *testing.T) { testDebounceConcurrent(t, open) })
	t.Run("PruneWindows", func(t *testing.T) { testPruneWindows(t, open) })
	t.Run("ListEvents", func(t *testing.T) { testListEvents(t, open) })
	t.Run("ListEventsStatus", func(t *testing.T) { testListEventsStatus(t, open) })
	t.Run("DeadLetters", func(t *testing.T) { testDeadLetters(t, open) })
	t.Run("Meta", func(t *testing.T) { testMeta(t, open) })
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
}

// deliveries returns event seq's deliveries, failing t unless there are n.
func deliveries(t *testing.T, s storage.Store, seq uint64, n int) []*app.Delivery {
	t.Helper()
	ds, err := s.EventDeliveries(seq)
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
	mustAccept(t, s, e, &app.Plan{Direct: dests})
	ds := deliveries(t, s, e.Seq, len(dests))
	slices.SortFunc(ds, func(a, b *app.Delivery) int { return cmp.Compare(a.ID, b.ID) })
	return e, ds
}

// record records one attempt and fails t on an error.
func record(t *testing.T, s storage.Store, id uint64, a *app.Attempt, state app.DeliveryState, due time.Time) {
	t.Helper()
	if err := s.RecordAttempts([]app.AttemptRecord{{ID: id, Attempt: a, State: state, Due: due}})[0]; err != nil {
		t.Fatalf("RecordAttempts(%d): %v", id, err)
	}
}

func counts(t *testing.T, s storage.Store) (ids, events int) {
	t.Helper()
	ids, events, err := s.Counts()
	if err != nil {
		t.Fatal(err)
	}
	return ids, events
}

func testAccept(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		s := open(t)
		e := NewEvent("shop", "evt_1", T0)
		mustAccept(t, s, e, nil)
		got, err := s.Event(e.Seq)
		if err != nil || got == nil {
			t.Fatalf("Event(%d) = %v, %v", e.Seq, got, err)
		}
		if string(got.Body) != string(e.Body) || got.ID != "evt_1" || got.Source != "shop" || got.Topic != "orders/create" || got.Seq != e.Seq {
			t.Fatalf("stored event = %+v, want %+v", got, e)
		}
		if !got.ReceivedAt.Equal(T0) || !slices.Equal(got.Header, e.Header) {
			t.Fatalf("stored event = %+v, want %+v", got, e)
		}
		exp, seq, ok, err := s.LookupID("shop", "evt_1")
		if err != nil || !ok || seq != e.Seq || !exp.Equal(T0.Add(time.Hour)) {
			t.Fatalf("LookupID = %v %d %v %v", exp, seq, ok, err)
		}
		if _, _, ok, err := s.LookupID("shop", "evt_2"); ok || err != nil {
			t.Fatalf("LookupID of an unknown id = %v, %v", ok, err)
		}
		if e, err := s.Event(e.Seq + 1000); e != nil || err != nil {
			t.Fatalf("Event of an unknown seq = %+v, %v; want nil, nil", e, err)
		}
		if err := s.Ping(); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
	t.Run("EmptyAndBinary", func(t *testing.T) {
		s := open(t)
		e := &app.Event{Source: "shop", ID: "evt_bin", ReceivedAt: T0, Body: []byte{0, 1, 2, 0xff, '\n', 0}}
		mustAccept(t, s, e, nil)
		empty := &app.Event{Source: "shop", ID: "evt_empty", ReceivedAt: T0}
		mustAccept(t, s, empty, nil)
		if got, _ := s.Event(e.Seq); got == nil || string(got.Body) != string(e.Body) || len(got.Header) != 0 || got.Topic != "" {
			t.Fatalf("binary body stored as %+v", got)
		}
		if got, _ := s.Event(empty.Seq); got == nil || len(got.Body) != 0 {
			t.Fatalf("empty body stored as %+v", got)
		}
	})
	t.Run("Duplicate", func(t *testing.T) {
		s := open(t)
		mustAccept(t, s, NewEvent("shop", "evt_1", T0), nil)
		e := NewEvent("shop", "evt_1", T0.Add(time.Minute))
		dup, err := s.Accept(ctx, e, T0.Add(time.Hour+time.Minute), &app.Plan{Direct: []string{"pos"}})
		if err != nil || !dup {
			t.Fatalf("Accept = %v, %v; want duplicate", dup, err)
		}
		if _, events := counts(t, s); events != 1 {
			t.Fatalf("events = %d, want 1", events)
		}
		if n, _ := s.CountPending(); n != 0 {
			t.Fatalf("a duplicate opened %d deliveries", n)
		}
		// The first acceptance's expiry stands.
		if exp, _, _, _ := s.LookupID("shop", "evt_1"); !exp.Equal(T0.Add(time.Hour)) {
			t.Fatalf("expiry = %v, want %v", exp, T0.Add(time.Hour))
		}
	})
	t.Run("SameIDOtherSource", func(t *testing.T) {
		s := open(t)
		for _, src := range []string{"shop", "shop2"} {
			mustAccept(t, s, NewEvent(src, "evt_1", T0), nil)
		}
	})
	t.Run("ExpiredNotYetSwept", func(t *testing.T) {
		s := open(t)
		mustAccept(t, s, NewEvent("shop", "evt_1", T0), nil)
		later := NewEvent("shop", "evt_1", T0.Add(2*time.Hour))
		mustAccept(t, s, later, nil)
		// The old expiry went with it: sweeping at the old expiry keeps the id.
		if n, err := s.ForgetExpiredIDs(T0.Add(90*time.Minute), 100); err != nil || n != 0 {
			t.Fatalf("ForgetExpiredIDs = %d, %v; want 0", n, err)
		}
		exp, seq, ok, _ := s.LookupID("shop", "evt_1")
		if !ok || seq != later.Seq || !exp.Equal(T0.Add(3*time.Hour)) {
			t.Fatalf("LookupID = %v, %d, %v; want the second acceptance (seq %d)", exp, seq, ok, later.Seq)
		}
	})
	t.Run("AfterClose", func(t *testing.T) {
		s := open(t)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Accept(ctx, NewEvent("shop", "x", T0), T0.Add(time.Hour), nil); err == nil {
			t.Fatal("Accept on a closed store succeeded")
		}
		if err := s.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
	})
}

// Two concurrent deliveries of one id cannot both be accepted: of 100
// goroutines sending the same id, exactly one is accepted, with its
// deliveries, and the others are duplicates.
func testAcceptConcurrent(t *testing.T, open Opener) {
	s := open(t)
	var accepted, dups atomic.Int64
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			e := NewEvent("shop", "evt_same", T0.Add(time.Duration(i)*time.Millisecond))
			dup, err := s.Accept(ctx, e, T0.Add(time.Hour), &app.Plan{Direct: []string{"pos"}})
			switch {
			case err != nil:
				t.Error(err)
			case dup:
				dups.Add(1)
			default:
				accepted.Add(1)
			}
		})
	}
	wg.Wait()
	if accepted.Load() != 1 || dups.Load() != 99 {
		t.Fatalf("accepted %d, duplicates %d; want 1, 99", accepted.Load(), dups.Load())
	}
	if ids, events := counts(t, s); events != 1 || ids != 1 {
		t.Fatalf("stored %d ids, %d events; want 1, 1", ids, events)
	}
	if n, _ := s.CountPending(); n != 1 {
		t.Fatalf("pending deliveries = %d, want 1", n)
	}
}

// hugeKey is an entity key no store keeps (bbolt's keys stop at 32 KiB,
// PostgreSQL's index rows at 8 KiB): random, so that it does not compress.
func hugeKey() string {
	b := make([]byte, 20<<10)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// An accept that fails part-way stores nothing: no id, no event, no
// delivery, no debounce step; the same id is accepted afterwards.
func testAcceptAtomic(t *testing.T, open Opener) {
	s := open(t)
	e := NewEvent("shop", "evt_atomic", T0)
	plan := &app.Plan{Direct: []string{"pos"}, Debounce: []*app.DebounceOp{
		{Route: "r", Key: "fine", Delay: time.Second, To: []string{"erp"}},
		{Route: "r", Key: hugeKey(), Delay: time.Second, To: []string{"erp"}},
	}}
	if _, err := s.Accept(ctx, e, T0.Add(time.Hour), plan); err == nil {
		t.Fatal("an accept with an unstorable debounce key succeeded")
	}
	if ids, events := counts(t, s); ids != 0 || events != 0 {
		t.Fatalf("after a failed accept: %d ids, %d events; want none", ids, events)
	}
	if _, _, ok, _ := s.LookupID("shop", "evt_atomic"); ok {
		t.Fatal("the id of a failed accept is remembered")
	}
	if n, _ := s.CountPending(); n != 0 {
		t.Fatalf("a failed accept left %d pending deliveries", n)
	}
	if n, _ := s.PendingCount(); n != 0 {
		t.Fatalf("a failed accept left %d debounced deliveries", n)
	}
	e2 := NewEvent("shop", "evt_atomic", T0.Add(time.Second))
	plan.Debounce = plan.Debounce[:1]
	mustAccept(t, s, e2, plan)
	if plan.Debounce[0].Result != app.Opened {
		t.Fatalf("debounce result %d, want Opened: the failed accept left a step behind", plan.Debounce[0].Result)
	}
	deliveries(t, s, e2.Seq, 1)
}

// A failing accept fails alone: the accepts committed with it succeed.
func testAcceptFailsAlone(t *testing.T, open Opener) {
	s := open(t)
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range errs {
		wg.Go(func() {
			e := NewEvent("shop", fmt.Sprint("evt_", i), T0)
			var plan *app.Plan
			if i == 7 {
				plan = &app.Plan{Debounce: []*app.DebounceOp{{Route: "r", Key: hugeKey(), Delay: time.Second, To: []string{"erp"}}}}
			}
			_, errs[i] = s.Accept(ctx, e, T0.Add(time.Hour), plan)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if (err != nil) != (i == 7) {
			t.Errorf("accept %d: %v", i, err)
		}
	}
	if ids, events := counts(t, s); ids != 39 || events != 39 {
		t.Fatalf("stored %d ids, %d events; want 39, 39", ids, events)
	}
}

// OnOpened hears of commits that opened work, not of unrouted accepts.
func testOnOpened(t *testing.T, open Opener) {
	s := open(t)
	opened := make(chan struct{}, 100)
	s.OnOpened(func() { opened <- struct{}{} })
	mustAccept(t, s, NewEvent("shop", "unrouted", T0), nil)
	mustAccept(t, s, NewEvent("shop", "routed", T0), &app.Plan{Direct: []string{"pos"}})
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("OnOpened not called after an accept that opened a delivery")
	}
}

func testOutbox(t *testing.T, open Opener) {
	s := open(t)
	e, ds := acceptRouted(t, s, "evt_1", "pos", "erp")
	if ds[0].Destination != "pos" || ds[1].Destination != "erp" || ds[0].State != app.Pending || ds[0].EventSeq != e.Seq ||
		!ds[0].Due.Equal(T0) || !ds[0].Created.Equal(T0) || ds[0].Attempts != 0 {
		t.Fatalf("deliveries = %+v, %+v", ds[0], ds[1])
	}
	if n, _ := s.CountPending(); n != 2 {
		t.Fatalf("CountPending = %d, want 2", n)
	}
	if n, _ := s.Backlog("pos", 10); n != 1 {
		t.Fatalf("Backlog(pos) = %d, want 1", n)
	}

	t.Run("DuePerDestination", func(t *testing.T) {
		// Not yet due one second earlier; skipped when in flight.
		if work, next, _ := s.DueDeliveries("pos", T0.Add(-time.Second), 10, Never); len(work) != 0 || !next.Equal(T0) {
			t.Fatalf("early: %d items, next %v", len(work), next)
		}
		if work, _, _ := s.DueDeliveries("pos", T0, 10, func(id uint64) bool { return id == ds[0].ID }); len(work) != 0 {
			t.Fatalf("in-flight delivery returned: %+v", work)
		}
		work, next, err := s.DueDeliveries("pos", T0, 10, Never)
		if err != nil || len(work) != 1 || !next.IsZero() {
			t.Fatalf("DueDeliveries = %+v, %v, %v", work, next, err)
		}
		if w := work[0]; w.Delivery.ID != ds[0].ID || string(w.Event.Body) != string(e.Body) || w.Event.Seq != e.Seq ||
			w.Event.ID != e.ID || !slices.Equal(w.Event.Header, e.Header) {
			t.Fatalf("work = %+v %+v", w.Delivery, w.Event)
		}
	})
	t.Run("RetryThenDead", func(t *testing.T) {
		due := T0.Add(time.Minute)
		record(t, s, ds[0].ID, &app.Attempt{Start: T0, Duration: time.Second, Status: 500, Error: "HTTP 500", Response: []byte("oops")}, app.Pending, due)
		if work, next, _ := s.DueDeliveries("pos", T0.Add(30*time.Second), 10, Never); len(work) != 0 || !next.Equal(due) {
			t.Fatalf("after retry scheduled: %d items, next %v; want none, next %v", len(work), next, due)
		}
		work, _, _ := s.DueDeliveries("pos", due, 10, Never)
		if len(work) != 1 || work[0].Delivery.Tries != 1 || work[0].Delivery.Attempts != 1 || !work[0].Delivery.Due.Equal(due) {
			t.Fatalf("the retry at its due time: %+v", work)
		}
		record(t, s, ds[0].ID, &app.Attempt{Start: due, Error: "timeout"}, app.Dead, time.Time{})
		d, attempts, err := s.Delivery(ds[0].ID)
		if err != nil || d.State != app.Dead || d.Attempts != 2 || d.Tries != 2 || len(attempts) != 2 || attempts[0].Status != 500 ||
			string(attempts[0].Response) != "oops" || attempts[0].Duration != time.Second || !attempts[0].Start.Equal(T0) ||
			attempts[1].Error != "timeout" || attempts[1].N != 2 || attempts[0].N != 1 {
			t.Fatalf("delivery = %+v, attempts %+v, %v", d, attempts, err)
		}
		if d.LastError != "timeout" || d.LastStatus != 0 || !d.Updated.Equal(due) {
			t.Fatalf("delivery's last attempt = %+v", d)
		}
		if work, next, _ := s.DueDeliveries("pos", T0.Add(time.Hour), 10, Never); len(work) != 0 || !next.IsZero() {
			t.Fatalf("dead delivery is due: %+v, next %v", work, next)
		}
		if n, _ := s.CountDead(); n != 1 {
			t.Fatalf("CountDead = %d", n)
		}
		if n, _ := s.CountPending(); n != 1 {
			t.Fatalf("CountPending = %d, want 1 (erp)", n)
		}
	})
	t.Run("Replay", func(t *testing.T) {
		now := T0.Add(2 * time.Hour)
		if n, err := s.ReplayDead(now); err != nil || n != 1 {
			t.Fatalf("ReplayDead = %d, %v", n, err)
		}
		d, attempts, _ := s.Delivery(ds[0].ID)
		if d.State != app.Pending || d.Tries != 0 || d.Attempts != 2 || len(attempts) != 2 || !d.Due.Equal(now) {
			t.Fatalf("after replay %+v", d)
		}
		if n, _ := s.CountDead(); n != 0 {
			t.Fatalf("CountDead after replay = %d", n)
		}
		if work, _, _ := s.DueDeliveries("pos", now, 10, Never); len(work) != 1 {
			t.Fatal("replayed delivery not due")
		}
		if err := s.Replay(ds[0].ID, now); err != nil {
			t.Fatalf("Replay of a pending delivery: %v (it is left as is)", err)
		}
		if err := s.Replay(12345678, now); !errors.Is(err, app.ErrNotFound) {
			t.Fatalf("Replay of an unknown delivery: %v, want ErrNotFound", err)
		}
		if _, _, err := s.Delivery(12345678); !errors.Is(err, app.ErrNotFound) {
			t.Fatalf("Delivery of an unknown id: %v, want ErrNotFound", err)
		}
	})
}

// Due deliveries come oldest first, at most limit of them, and next is the
// due time of the first one left.
func testDueOrder(t *testing.T, open Opener) {
	s := open(t)
	var want []string
	for i := range 5 {
		at := T0.Add(time.Duration(4-i) * time.Second) // accepted newest first
		e := NewEvent("shop", fmt.Sprint("evt_", i), at)
		mustAccept(t, s, e, &app.Plan{Direct: []string{"pos"}})
		want = append([]string{e.ID}, want...)
	}
	work, next, err := s.DueDeliveries("pos", T0.Add(time.Minute), 3, Never)
	if err != nil || len(work) != 3 || !next.Equal(T0.Add(3*time.Second)) {
		t.Fatalf("DueDeliveries = %d items, next %v, %v; want 3, next %v", len(work), next, err, T0.Add(3*time.Second))
	}
	for i, w := range work {
		if w.Event.ID != want[i] {
			t.Fatalf("item %d is %s, want %s (oldest due first)", i, w.Event.ID, want[i])
		}
	}
	if work, _, _ := s.DueDeliveries("erp", T0.Add(time.Minute), 3, Never); len(work) != 0 {
		t.Fatalf("another destination's deliveries returned: %+v", work)
	}
	if n, _ := s.Backlog("pos", 4); n != 4 {
		t.Fatalf("Backlog(pos, 4) = %d, want 4 (bounded)", n)
	}
}

// A batch of attempts is stored together; a record whose delivery is gone
// fails alone and the others are stored.
func testRecordAttempts(t *testing.T, open Opener) {
	s := open(t)
	_, ds := acceptRouted(t, s, "batch-1", "pos", "erp")
	retry := T0.Add(time.Minute)
	recs := []app.AttemptRecord{
		{ID: ds[0].ID, Attempt: &app.Attempt{Start: T0, Status: 200}, State: app.Delivered},
		{ID: 999_999_999, Attempt: &app.Attempt{Start: T0, Status: 200}, State: app.Delivered},
		{ID: ds[1].ID, Attempt: &app.Attempt{Start: T0, Status: 503, Error: "HTTP 503"}, State: app.Pending, Due: retry},
	}
	errs := s.RecordAttempts(recs)
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], app.ErrNotFound) || errs[2] != nil {
		t.Fatalf("errs = %v; want nil, not found, nil", errs)
	}
	if recs[0].Attempt.N != 1 || recs[2].Attempt.N != 1 {
		t.Fatalf("attempt numbers %d, %d; want 1, 1", recs[0].Attempt.N, recs[2].Attempt.N)
	}
	if d, attempts, err := s.Delivery(ds[0].ID); err != nil || d.State != app.Delivered || len(attempts) != 1 || attempts[0].Status != 200 {
		t.Fatalf("pos: %+v, %+v, %v", d, attempts, err)
	}
	if d, _, err := s.Delivery(ds[1].ID); err != nil || d.State != app.Pending || !d.Due.Equal(retry) || d.LastStatus != 503 || d.LastError != "HTTP 503" {
		t.Fatalf("erp: %+v, %v", d, err)
	}
	if work, next, _ := s.DueDeliveries("erp", T0, 10, Never); len(work) != 0 || !next.Equal(retry) {
		t.Fatalf("erp due now: %d items, next %v; want none until %v", len(work), next, retry)
	}
	if work, next, _ := s.DueDeliveries("pos", T0.Add(time.Hour), 10, Never); len(work) != 0 || !next.IsZero() {
		t.Fatalf("delivered delivery is due: %+v, next %v", work, next)
	}
	if n, _ := s.CountPending(); n != 1 {
		t.Fatalf("CountPending = %d, want 1", n)
	}
}

// An attempt is recorded whatever bytes a destination put in its answer
// and in the error text made from it (a status line of bytes that are not
// UTF-8, a NUL): the answer's start is kept byte-exact, and the error
// keeps its readable part.
func testAttemptAnyBytes(t *testing.T, open Opener) {
	s := open(t)
	_, ds := acceptRouted(t, s, "evt_bytes", "pos", "erp")
	response := []byte("\xff\xfe\x00ok\x80")
	errs := s.RecordAttempts([]app.AttemptRecord{
		{ID: ds[0].ID, Attempt: &app.Attempt{Start: T0, Error: "bad status line \"\xff\x00\xc3\x28\"", Response: response}, State: app.Pending, Due: T0.Add(time.Minute)},
		{ID: ds[1].ID, Attempt: &app.Attempt{Start: T0, Status: 200}, State: app.Delivered},
	})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("RecordAttempts = %v: an answer's bytes failed the record (and its neighbour's)", errs)
	}
	d, attempts, err := s.Delivery(ds[0].ID)
	if err != nil || len(attempts) != 1 || string(attempts[0].Response) != string(response) {
		t.Fatalf("attempt %+v, %v; want the response %q byte-exact", attempts, err, response)
	}
	for _, text := range []string{attempts[0].Error, d.LastError} {
		if !strings.HasPrefix(text, "bad status line") {
			t.Fatalf("error text %q lost its readable part", text)
		}
	}
}

// A delivered delivery can be replayed too, keeping its history.
func testReplayDelivered(t *testing.T, open Opener) {
	s := open(t)
	e := NewEvent("shop", "evt_1", T0)
	mustAccept(t, s, e, &app.Plan{Direct: []string{"pos"}})
	d := deliveries(t, s, e.Seq, 1)[0]
	record(t, s, d.ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	if err := s.Replay(d.ID, T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	work, _, _ := s.DueDeliveries("pos", T0.Add(time.Hour), 10, Never)
	if len(work) != 1 || work[0].Delivery.ID != d.ID || work[0].Delivery.Attempts != 1 || work[0].Delivery.Tries != 0 {
		t.Fatalf("replayed delivered delivery: %+v", work)
	}
}

func testDeleteEventsBefore(t *testing.T, open Opener) {
	s := open(t)
	for i := range 10 {
		at := T0.Add(time.Duration(i) * time.Minute)
		mustAccept(t, s, NewEvent("shop", fmt.Sprint(i), at), nil)
	}
	n, err := s.DeleteEventsBefore(T0.Add(5*time.Minute), 3)
	if err != nil || n != 3 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 3 (the limit)", n, err)
	}
	n, err = s.DeleteEventsBefore(T0.Add(5*time.Minute), 100)
	if err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 2", n, err)
	}
	if _, events := counts(t, s); events != 5 {
		t.Fatalf("events left = %d, want 5", events)
	}
	rows, _, _ := s.ListEvents(app.EventQuery{Limit: 100})
	if len(rows) != 5 || rows[len(rows)-1].ID != "5" {
		t.Fatalf("events left: %+v; want 9 down to 5", rows)
	}
	// Ids outlive their events: still duplicates.
	if dup, _ := s.Accept(ctx, NewEvent("shop", "0", T0.Add(6*time.Minute)), T0.Add(2*time.Hour), nil); !dup {
		t.Fatal("id of a deleted event was accepted again")
	}
}

// Delivered events are deleted after retention with their deliveries and
// attempts; events with a pending or dead delivery stay.
func testDeleteKeepsUndelivered(t *testing.T, open Opener) {
	s := open(t)
	var seqs []uint64
	var ids []uint64
	for i, state := range []app.DeliveryState{app.Delivered, app.Pending, app.Dead, app.Delivered} {
		e := NewEvent("shop", string(rune('a'+i)), T0.Add(time.Duration(i)*time.Second))
		mustAccept(t, s, e, &app.Plan{Direct: []string{"pos"}})
		seqs = append(seqs, e.Seq)
		d := deliveries(t, s, e.Seq, 1)[0]
		ids = append(ids, d.ID)
		if state != app.Pending {
			record(t, s, d.ID, &app.Attempt{Start: T0}, state, time.Time{})
		}
	}
	n, err := s.DeleteEventsBefore(T0.Add(time.Minute), 100)
	if err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 2 (the delivered ones)", n, err)
	}
	for i, want := range []bool{false, true, true, false} {
		e, _ := s.Event(seqs[i])
		if (e != nil) != want {
			t.Errorf("event %d kept = %v, want %v", i, e != nil, want)
		}
		ds, _ := s.EventDeliveries(seqs[i])
		if (len(ds) > 0) != want {
			t.Errorf("event %d deliveries %+v", i, ds)
		}
		if _, _, err := s.Delivery(ids[i]); (err == nil) != want || !want && !errors.Is(err, app.ErrNotFound) {
			t.Errorf("delivery of event %d: %v", i, err)
		}
	}
	if n, _ := s.CountDead(); n != 1 {
		t.Fatalf("CountDead = %d", n)
	}
}

// The sweep never leaves a delivery without its event, nor loses one: a
// delivered delivery replayed while the sweep deletes its event either
// keeps its event (and goes out again) or goes with it (and the replay
// says not found); the event of a debounced delivery that fires while the
// sweep runs is kept, before and after it fires, and its delivery opened.
func testSweepRaces(t *testing.T, open Opener) {
	s := open(t)
	const n = 150
	var wg sync.WaitGroup
	for i := range n {
		old := T0.Add(time.Duration(i) * time.Millisecond)
		e := NewEvent("shop", fmt.Sprint("race-", i), old)
		mustAccept(t, s, e, &app.Plan{Direct: []string{"pos"}})
		d := deliveries(t, s, e.Seq, 1)[0]
		record(t, s, d.ID, &app.Attempt{Start: old, Status: 200}, app.Delivered, time.Time{})
		f := NewEvent("shop", fmt.Sprint("deb-", i), old)
		mustAccept(t, s, f, &app.Plan{Debounce: []*app.DebounceOp{{Route: "r", Key: fmt.Sprint("k", i), Delay: time.Millisecond, To: []string{"erp"}}}})
		var replayErr error
		start := make(chan struct{})
		wg.Go(func() { <-start; replayErr = s.Replay(d.ID, T0.Add(time.Hour)) })
		wg.Go(func() { <-start; s.FirePending(T0.Add(time.Hour)) })
		wg.Go(func() {
			<-start
			if _, err := s.DeleteEventsBefore(T0.Add(time.Minute), 10); err != nil {
				t.Error(err)
			}
		})
		close(start)
		wg.Wait()
		s.FirePending(T0.Add(time.Hour)) // whatever did not fire in the race
		ev, _ := s.Event(e.Seq)
		_, _, derr := s.Delivery(d.ID)
		switch {
		case replayErr == nil && (ev == nil || derr != nil):
			t.Fatalf("round %d: the replay succeeded, but the event (%v) or the delivery (%v) is gone", i, ev != nil, derr)
		case replayErr != nil && !errors.Is(replayErr, app.ErrNotFound):
			t.Fatalf("round %d: replay: %v", i, replayErr)
		case (ev == nil) != (derr != nil):
			t.Fatalf("round %d: event kept %v, delivery: %v", i, ev != nil, derr)
		}
		fv, _ := s.Event(f.Seq)
		if ds, _ := s.EventDeliveries(f.Seq); fv == nil || len(ds) != 1 || ds[0].State != app.Pending {
			t.Fatalf("round %d: the debounced event kept %v, its deliveries %+v; want it kept and one pending delivery", i, fv != nil, ds)
		}
	}
}

// The sweep forgets expired ids in bounded chunks; a forgotten id is
// accepted again; unexpired ones stay.
func testForgetExpiredIDs(t *testing.T, open Opener) {
	s := open(t)
	const expired, kept, chunk = 1200, 50, 500
	fill := func(source string, n int, exp time.Time) {
		InParallel(t, n, func(i int) error {
			_, err := s.Accept(ctx, NewEvent(source, fmt.Sprintf("evt_%d", i), T0), exp, nil)
			return err
		})
	}
	fill("old", expired, T0.Add(time.Hour))
	fill("new", kept, T0.Add(48*time.Hour))

	now := T0.Add(2 * time.Hour)
	var chunks, total int
	for {
		n, err := s.ForgetExpiredIDs(now, chunk)
		if err != nil {
			t.Fatal(err)
		}
		if n > chunk {
			t.Fatalf("one call forgot %d ids, limit %d", n, chunk)
		}
		total += n
		chunks++
		if n < chunk {
			break
		}
	}
	if total != expired || chunks != expired/chunk+1 {
		t.Fatalf("forgot %d ids in %d chunks; want %d in %d", total, chunks, expired, expired/chunk+1)
	}
	if ids, _ := counts(t, s); ids != kept {
		t.Fatalf("ids left = %d, want %d", ids, kept)
	}
	if dup, err := s.Accept(ctx, NewEvent("old", "evt_7", now), now.Add(time.Hour), nil); err != nil || dup {
		t.Fatalf("re-accept after sweep = %v, %v", dup, err)
	}
	if dup, err := s.Accept(ctx, NewEvent("new", "evt_7", now), now.Add(time.Hour), nil); err != nil || !dup {
		t.Fatalf("unexpired id after sweep = %v, %v; want duplicate", dup, err)
	}
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

// op is a debounced route's step for key: 10 s debounce, 2 sends per minute.
func op(key string) *app.DebounceOp {
	return &app.DebounceOp{Route: "customers", Key: key, Delay: 10 * time.Second, Limit: 2, Window: time.Minute, To: []string{"pos", "erp"}}
}

// acceptDebounced accepts an event of key at at and returns its seq and
// what became of its debounce step.
func acceptDebounced(t *testing.T, s storage.Store, id, key string, at time.Time) (uint64, app.DebounceResult) {
	t.Helper()
	o := op(key)
	e := NewEvent("shop", id, at)
	e.Body = []byte(`{"n":"` + id + `"}`)
	mustAccept(t, s, e, &app.Plan{Debounce: []*app.DebounceOp{o}})
	return e.Seq, o.Result
}

// fire runs FirePending at now and checks how many fired and the next due time.
func fire(t *testing.T, s storage.Store, now time.Time, want int, wantNext time.Time) {
	t.Helper()
	fired, next, err := s.FirePending(now)
	if err != nil || fired["customers"] != want || !next.Equal(wantNext) {
		t.Fatalf("FirePending(%v) = %v, next %v, %v; want %d fired, next %v", now.Sub(T0), fired, next.Sub(T0), err, want, wantNext.Sub(T0))
	}
}

// Debounce merges a burst into one delivery of the latest event, opens a
// new window once it fired, and defers past the rate limit without
// dropping anything.
func testDebounce(t *testing.T, open Opener) {
	s := open(t)
	seq1, r := acceptDebounced(t, s, "u1", "c1", T0)
	if r != app.Opened {
		t.Fatalf("first step: %d, want Opened", r)
	}
	seq2, r := acceptDebounced(t, s, "u2", "c1", T0.Add(time.Second))
	if r != app.Merged {
		t.Fatalf("second step: %d, want Merged", r)
	}
	if _, r := acceptDebounced(t, s, "o1", "c2", T0.Add(2*time.Second)); r != app.Opened {
		t.Fatalf("another key: %d, want Opened", r)
	}
	if n, _ := s.PendingCount(); n != 2 {
		t.Fatalf("PendingCount = %d, want 2", n)
	}
	if n, _ := s.CountPending(); n != 2 {
		t.Fatalf("CountPending = %d, want 2 (debounced ones count)", n)
	}
	fire(t, s, T0.Add(9*time.Second), 0, T0.Add(10*time.Second))
	fire(t, s, T0.Add(10*time.Second), 1, T0.Add(12*time.Second))
	ds := deliveries(t, s, seq2, 2)
	if ds[0].Due.After(T0.Add(10*time.Second)) || ds[0].State != app.Pending {
		t.Fatalf("fired deliveries = %+v", ds[0])
	}
	deliveries(t, s, seq1, 0)
	if merged, err := s.MergedInto(seq2); err != nil || !slices.Equal(merged, []uint64{seq1}) {
		t.Fatalf("MergedInto = %v, %v; want [%d]", merged, err, seq1)
	}
	work, _, _ := s.DueDeliveries("pos", T0.Add(10*time.Second), 10, Never)
	if len(work) != 1 || string(work[0].Event.Body) != `{"n":"u2"}` {
		t.Fatalf("the fired delivery carries %+v, want the latest body", work)
	}
	fire(t, s, T0.Add(12*time.Second), 1, time.Time{})

	// The key is free again: a new window (second send in the minute).
	if _, r := acceptDebounced(t, s, "u3", "c1", T0.Add(11*time.Second)); r != app.Opened {
		t.Fatalf("after firing: %d, want Opened", r)
	}
	fire(t, s, T0.Add(21*time.Second), 1, time.Time{})
	// Third in the minute: deferred until the first send leaves the window.
	seq4, r := acceptDebounced(t, s, "u4", "c1", T0.Add(22*time.Second))
	if r != app.Deferred {
		t.Fatalf("over the rate limit: %d, want Deferred", r)
	}
	seq5, r := acceptDebounced(t, s, "u5", "c1", T0.Add(23*time.Second))
	if r != app.Merged {
		t.Fatalf("into the deferred one: %d, want Merged", r)
	}
	fire(t, s, T0.Add(59*time.Second), 0, T0.Add(time.Minute))
	fire(t, s, T0.Add(time.Minute), 1, time.Time{})
	if merged, _ := s.MergedInto(seq5); len(merged) != 1 || merged[0] != seq4 {
		t.Fatalf("MergedInto(u5) = %v, want [u4 %d]", merged, seq4)
	}
	// The deferred send took a slot at T0+1m: the window holds 0:11 and
	// 1:00, so the next one defers to 1:11.
	if _, r := acceptDebounced(t, s, "u6", "c1", T0.Add(61*time.Second)); r != app.Deferred {
		t.Fatalf("after the deferred send: %d, want Deferred", r)
	}
	fire(t, s, T0.Add(70*time.Second), 0, T0.Add(71*time.Second))
	if n, _ := s.PendingCount(); n != 1 {
		t.Fatalf("PendingCount = %d, want 1", n)
	}
}

// Many events of one key at once make one pending delivery: one opens it,
// the others merge into it.
func testDebounceConcurrent(t *testing.T, open Opener) {
	s := open(t)
	var mu sync.Mutex
	results := map[app.DebounceResult]int{}
	InParallel(t, 100, func(i int) error {
		o := op("same")
		o.Limit = 0
		_, err := s.Accept(ctx, NewEvent("shop", fmt.Sprint("e", i), T0), T0.Add(time.Hour), &app.Plan{Debounce: []*app.DebounceOp{o}})
		mu.Lock()
		results[o.Result]++
		mu.Unlock()
		return err
	})
	if results[app.Opened] != 1 || results[app.Merged] != 99 {
		t.Fatalf("results %v; want 1 opened, 99 merged", results)
	}
	if n, _ := s.PendingCount(); n != 1 {
		t.Fatalf("PendingCount = %d, want 1", n)
	}
	fire(t, s, T0.Add(10*time.Second), 1, time.Time{})
	if n, _ := s.CountPending(); n != 2 {
		t.Fatalf("CountPending = %d, want 2 (one per destination)", n)
	}
}

// PruneWindows forgets only windows every send of which left, at most
// limit per call.
func testPruneWindows(t *testing.T, open Opener) {
	s := open(t)
	for i := range 5 {
		acceptDebounced(t, s, fmt.Sprint("w", i), fmt.Sprint("k", i), T0.Add(time.Duration(i)*time.Minute))
	}
	fire(t, s, T0.Add(5*time.Minute), 5, time.Time{})
	// At 5:30 the windows of the sends at 0:00 … 4:00 hold nothing
	// (each lasts a minute) but the one of 4:00.
	if n, err := s.PruneWindows(T0.Add(4*time.Minute+30*time.Second), 3); err != nil || n != 3 {
		t.Fatalf("PruneWindows = %d, %v; want 3 (the limit)", n, err)
	}
	if n, err := s.PruneWindows(T0.Add(4*time.Minute+30*time.Second), 100); err != nil || n != 1 {
		t.Fatalf("PruneWindows = %d, %v; want 1", n, err)
	}
	if n, err := s.PruneWindows(T0.Add(10*time.Minute), 100); err != nil || n != 1 {
		t.Fatalf("PruneWindows = %d, %v; want the last one", n, err)
	}
	// A pruned key starts a fresh window.
	if _, r := acceptDebounced(t, s, "w5", "k0", T0.Add(11*time.Minute)); r != app.Opened {
		t.Fatalf("after pruning: %d, want Opened", r)
	}
}

// ListEvents pages newest first with a cursor and filters by source, topic
// (a glob), id, and time.
func testListEvents(t *testing.T, open Opener) {
	s := open(t)
	var all []*app.Event
	for i := range 30 {
		src := []string{"shop", "stripe", "gh"}[i%3]
		e := NewEvent(src, fmt.Sprint("evt_", i), T0.Add(time.Duration(i)*time.Second))
		e.Topic = []string{"orders/create", "orders/paid", "push"}[i%3]
		e.Body = make([]byte, i)
		mustAccept(t, s, e, nil)
		all = append(all, e)
	}
	ids := func(rows []app.EventSummary) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	var got []string
	var pages int
	q := app.EventQuery{Limit: 7}
	for {
		rows, next, err := s.ListEvents(q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, ids(rows)...)
		if next == 0 {
			break
		}
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		q.Before = next
	}
	var want []string
	for i := len(all) - 1; i >= 0; i-- {
		want = append(want, all[i].ID)
	}
	if !slices.Equal(got, want) || pages != 5 {
		t.Fatalf("paged %v in %d pages; want %v in 5", got, pages, want)
	}
	rows, _, _ := s.ListEvents(app.EventQuery{Limit: 1})
	if r := rows[0]; r.Seq != all[29].Seq || r.Source != "gh" || r.Topic != "push" || r.Size != 29 || !r.ReceivedAt.Equal(all[29].ReceivedAt) || r.Status != "unrouted" {
		t.Fatalf("newest row = %+v", r)
	}
	for _, tc := range []struct {
		name string
		q    app.EventQuery
		want []string
	}{
		{"Source", app.EventQuery{Source: "stripe", Limit: 3}, []string{"evt_28", "evt_25", "evt_22"}},
		{"Topic", app.EventQuery{Topic: "orders/*", Limit: 4}, []string{"evt_28", "evt_27", "evt_25", "evt_24"}},
		{"SourceAndTopic", app.EventQuery{Source: "gh", Topic: "orders/*", Limit: 50}, nil},
		{"ID", app.EventQuery{ID: "evt_4", Limit: 50}, []string{"evt_4"}},
		{"IDAndSource", app.EventQuery{ID: "evt_4", Source: "stripe", Limit: 50}, []string{"evt_4"}},
		{"IDOtherSource", app.EventQuery{ID: "evt_4", Source: "shop", Limit: 50}, nil},
		{"UnknownID", app.EventQuery{ID: "nope", Limit: 50}, nil},
		{"Until", app.EventQuery{Until: T0.Add(5 * time.Second), Limit: 3}, []string{"evt_5", "evt_4", "evt_3"}},
		{"Since", app.EventQuery{Since: T0.Add(27 * time.Second), Limit: 50}, []string{"evt_29", "evt_28", "evt_27"}},
		{"SinceUntil", app.EventQuery{Since: T0.Add(10 * time.Second), Until: T0.Add(12 * time.Second), Limit: 50}, []string{"evt_12", "evt_11", "evt_10"}},
		{"Before", app.EventQuery{Before: all[3].Seq, Limit: 50}, []string{"evt_2", "evt_1", "evt_0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, _, err := s.ListEvents(tc.q)
			if err != nil || !slices.Equal(ids(rows), tc.want) {
				t.Fatalf("ListEvents(%+v) = %v, %v; want %v", tc.q, ids(rows), err, tc.want)
			}
		})
	}
	// An id that several sources use is found in each.
	mustAccept(t, s, NewEvent("stripe", "evt_0", T0.Add(time.Hour)), nil)
	if rows, _, _ := s.ListEvents(app.EventQuery{ID: "evt_0", Limit: 50}); len(rows) != 2 {
		t.Fatalf("id in two sources: %+v", rows)
	}
}

// The status of an event is the worst state of its deliveries: dead, then
// pending, then delivered; "merged" when debouncing folded it into another
// event, "unrouted" without deliveries.
func testListEventsStatus(t *testing.T, open Opener) {
	s := open(t)
	plan := func() *app.Plan { return &app.Plan{Direct: []string{"pos", "erp"}} }
	dlv := NewEvent("shop", "delivered", T0)
	mustAccept(t, s, dlv, plan())
	pend := NewEvent("shop", "pending", T0.Add(time.Second))
	mustAccept(t, s, pend, plan())
	dead := NewEvent("shop", "dead", T0.Add(2*time.Second))
	mustAccept(t, s, dead, plan())
	mustAccept(t, s, NewEvent("shop", "unrouted", T0.Add(3*time.Second)), nil)
	acceptDebounced(t, s, "merged", "k", T0.Add(4*time.Second))
	acceptDebounced(t, s, "fired", "k", T0.Add(5*time.Second))
	fire(t, s, T0.Add(time.Minute), 1, time.Time{})
	// Waiting in a debounce window: not unrouted, and says until when.
	acceptDebounced(t, s, "waiting", "k2", T0.Add(6*time.Second))
	for _, d := range deliveries(t, s, dlv.Seq, 2) {
		record(t, s, d.ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	}
	ds := deliveries(t, s, pend.Seq, 2)
	record(t, s, ds[0].ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	ds = deliveries(t, s, dead.Seq, 2)
	record(t, s, ds[0].ID, &app.Attempt{Start: T0, Status: 410}, app.Dead, time.Time{})

	rows, _, err := s.ListEvents(app.EventQuery{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.ID] = r.Status
	}
	want := map[string]string{"delivered": "delivered", "pending": "pending", "dead": "dead", "unrouted": "unrouted", "merged": "merged", "fired": "pending", "waiting": "waiting"}
	for _, r := range rows {
		if w := r.ID == "waiting"; w == r.WaitingUntil.IsZero() {
			t.Errorf("%s: waiting until %v", r.ID, r.WaitingUntil)
		}
	}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("status of %s = %q, want %q", id, got[id], st)
		}
	}
	for _, st := range []string{"delivered", "dead", "unrouted", "merged", "waiting"} {
		rows, _, err := s.ListEvents(app.EventQuery{Status: st, Limit: 50})
		if err != nil || len(rows) != 1 || rows[0].ID != st {
			t.Errorf("ListEvents(status %s) = %+v, %v", st, rows, err)
		}
	}
	if rows, _, _ := s.ListEvents(app.EventQuery{Status: "pending", Limit: 50}); len(rows) != 2 {
		t.Errorf("ListEvents(status pending) = %+v; want pending and fired", rows)
	}
	if rows, _, _ := s.ListEvents(app.EventQuery{ID: "dead", Status: "pending", Limit: 50}); len(rows) != 0 {
		t.Errorf("ListEvents(id dead, status pending) = %+v; want none", rows)
	}
}

// Dead letters page by delivery id, with the total on every page.
func testDeadLetters(t *testing.T, open Opener) {
	s := open(t)
	var dead []uint64
	for i := range 12 {
		e := NewEvent("shop", fmt.Sprint("d", i), T0)
		mustAccept(t, s, e, &app.Plan{Direct: []string{"pos"}})
		d := deliveries(t, s, e.Seq, 1)[0]
		if i%4 != 3 { // 9 dead, 3 left pending
			record(t, s, d.ID, &app.Attempt{Start: T0, Status: 500, Error: "HTTP 500"}, app.Dead, time.Time{})
			dead = append(dead, d.ID)
		}
	}
	slices.Sort(dead)
	var got []uint64
	after := uint64(0)
	for {
		page, total, err := s.DeadLetters(after, 4)
		if err != nil || total != 9 {
			t.Fatalf("DeadLetters(%d) total %d, %v; want 9", after, total, err)
		}
		for _, d := range page {
			if d.State != app.Dead || d.LastError != "HTTP 500" {
				t.Fatalf("dead letter %+v", d)
			}
			got = append(got, d.ID)
		}
		if len(page) < 4 {
			break
		}
		after = page[len(page)-1].ID
	}
	if !slices.Equal(got, dead) {
		t.Fatalf("paged %v, want %v", got, dead)
	}
	if n, err := s.CountDead(); n != 9 || err != nil {
		t.Fatalf("CountDead = %d, %v", n, err)
	}
	if n, err := s.ReplayDead(T0.Add(time.Hour)); n != 9 || err != nil {
		t.Fatalf("ReplayDead = %d, %v", n, err)
	}
	if page, total, _ := s.DeadLetters(0, 4); len(page) != 0 || total != 0 {
		t.Fatalf("after replay: %d dead letters, total %d", len(page), total)
	}
	if n, _ := s.CountPending(); n != 12 {
		t.Fatalf("CountPending = %d, want 12", n)
	}
}

func testMeta(t *testing.T, open Opener) {
	s := open(t)
	if v, err := s.Meta("status_password_bcrypt"); v != nil || err != nil {
		t.Fatalf("Meta of an unset name = %q, %v; want nil", v, err)
	}
	for _, val := range [][]byte{[]byte("$2a$10$hash"), []byte("second\x00value")} {
		if err := s.SetMeta("status_password_bcrypt", val); err != nil {
			t.Fatal(err)
		}
		if v, err := s.Meta("status_password_bcrypt"); string(v) != string(val) || err != nil {
			t.Fatalf("Meta = %q, %v; want %q", v, err, val)
		}
	}
}
