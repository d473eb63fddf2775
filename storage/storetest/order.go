package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"hookbox/app"
	"hookbox/storage"
)

// acceptOrdered accepts event id at at with one delivery per dest on
// route, in order group key, and returns the deliveries in dests' order.
func acceptOrdered(t *testing.T, s storage.Store, id string, at time.Time, route, key string, dests ...string) []*app.Delivery {
	t.Helper()
	e := NewEvent("shop", id, at)
	plan := &app.Plan{}
	for _, d := range dests {
		plan.Direct = append(plan.Direct, app.Direct{Dest: d, Route: route, OrderKey: key})
	}
	mustAccept(t, s, e, plan)
	ds := deliveries(t, s, e.Seq, len(dests))
	slices.SortFunc(ds, func(a, b *app.Delivery) int { return int(a.ID) - int(b.ID) })
	for _, d := range ds {
		// PostgreSQL's text holds no NUL nor invalid UTF-8: a key with
		// them comes back with U+FFFD in their place.
		exact := utf8.ValidString(key) && !strings.Contains(key, "\x00")
		if d.Route != route || exact && d.OrderKey != key {
			t.Fatalf("delivery %d of %s: route %q, order key %q; want %q, %q", d.ID, id, d.Route, d.OrderKey, route, key)
		}
	}
	return ds
}

// due returns the ids DueDeliveries gives for dest at now (up to 100,
// skipping skip) and its next, failing t on an error.
func due(t *testing.T, s storage.Store, dest string, now time.Time, skip func(uint64) bool) ([]uint64, time.Time) {
	t.Helper()
	work, next, err := s.DueDeliveries(ctx, dest, now, 100, skip)
	if err != nil {
		t.Fatalf("DueDeliveries(%s): %v", dest, err)
	}
	var ids []uint64
	for _, w := range work {
		ids = append(ids, w.Delivery.ID)
		if w.Delivery.Route == "" && w.Delivery.OrderKey != "" {
			t.Fatalf("due delivery %d lost its route", w.Delivery.ID)
		}
	}
	slices.Sort(ids)
	return ids, next
}

func sameIDs(t *testing.T, what string, got []uint64, want ...uint64) {
	t.Helper()
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: ids %v, want %v", what, got, want)
	}
}

// Deliveries of a route with the same order key go to a destination one
// at a time, in accept order: while the first of key A waits for its
// retry (or is in flight), the later ones of A are held back, and only
// those: key B, deliveries without a key, A on another route and A to
// another destination flow. A dead head releases the key, a delivered
// one too; a replayed delivery keeps its route and order key and, being
// the lowest id of its group again, goes first.
func testOrderHeld(t *testing.T, open Opener) {
	s := open(t)
	a1 := acceptOrdered(t, s, "a1", T0, "customers", "A", "pos", "erp")
	a2 := acceptOrdered(t, s, "a2", T0, "customers", "A", "pos")[0]
	a3 := acceptOrdered(t, s, "a3", T0, "customers", "A", "pos")[0]
	b1 := acceptOrdered(t, s, "b1", T0, "customers", "B", "pos")[0]
	other := acceptOrdered(t, s, "r1", T0, "orders", "A", "pos")[0]
	e := NewEvent("shop", "n1", T0)
	mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
	none := deliveries(t, s, e.Seq, 1)[0]
	if none.OrderKey != "" || none.Route != "" {
		t.Fatalf("a delivery opened without a route has route %q, order key %q", none.Route, none.OrderKey)
	}

	first, _ := due(t, s, "pos", T0, Never)
	sameIDs(t, "pos at first (the heads of A, B, A on another route, no key)", first, a1[0].ID, b1.ID, other.ID, none.ID)
	got, _ := due(t, s, "erp", T0, Never)
	sameIDs(t, "erp (A to another destination)", got, a1[1].ID)

	// The head in flight holds its group (the dispatcher skips what it has
	// in hand; PostgreSQL's lease does the same).
	inHand := func(id uint64) bool { return slices.Contains(first, id) }
	got, _ = due(t, s, "pos", T0, inHand)
	sameIDs(t, "pos with all of the above in flight (A's head too)", got)

	retry := T0.Add(time.Minute)
	record(t, s, a1[0].ID, &app.Attempt{Start: T0, Status: 503, Error: "HTTP 503"}, app.Pending, retry)
	for _, id := range []uint64{b1.ID, other.ID, none.ID, a1[1].ID} {
		record(t, s, id, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	}
	b2 := acceptOrdered(t, s, "b2", T0.Add(time.Second), "customers", "B", "pos")[0]
	got, next := due(t, s, "pos", T0.Add(10*time.Second), Never)
	sameIDs(t, "pos while A's head waits for its retry (B flows)", got, b2.ID)
	if !next.Equal(retry) {
		t.Fatalf("next = %v, want A's retry at %v: held deliveries must not make next now", next.Sub(T0), retry.Sub(T0))
	}
	record(t, s, b2.ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})

	// Dead releases the key: the next of A is the head, the one after it
	// still waits.
	record(t, s, a1[0].ID, &app.Attempt{Start: retry, Status: 410, Error: "HTTP 410"}, app.Dead, time.Time{})
	got, _ = due(t, s, "pos", retry, Never)
	sameIDs(t, "pos once A's head is dead", got, a2.ID)
	// The page names the dead one a2 went out after; the first of a group,
	// and A on another route, have none before them.
	if prev, err := s.PreviousInGroup(ctx, a2); err != nil || prev == nil || prev.ID != a1[0].ID || prev.State != app.Dead {
		t.Fatalf("PreviousInGroup(a2) = %+v, %v; want the dead %d", prev, err, a1[0].ID)
	}
	if prev, err := s.PreviousInGroup(ctx, b2); err != nil || prev == nil || prev.ID != b1.ID {
		t.Fatalf("PreviousInGroup(b2) = %+v, %v; want %d", prev, err, b1.ID)
	}
	for _, d := range []*app.Delivery{a1[0], a1[1], other, none} {
		if prev, err := s.PreviousInGroup(ctx, d); err != nil || prev != nil {
			t.Fatalf("PreviousInGroup(%d) = %+v, %v; want none", d.ID, prev, err)
		}
	}
	// Delivered releases it too.
	record(t, s, a2.ID, &app.Attempt{Start: retry, Status: 200}, app.Delivered, time.Time{})

	// A replay keeps route and order key, and goes first again: a3 waits
	// behind the replayed a1.
	later := retry.Add(time.Minute)
	if err := s.Replay(ctx, a1[0].ID, later); err != nil {
		t.Fatal(err)
	}
	if d, _, err := s.Delivery(ctx, a1[0].ID); err != nil || d.Route != "customers" || d.OrderKey != "A" || d.State != app.Pending {
		t.Fatalf("replayed delivery: %+v, %v; want pending on route customers, order key A", d, err)
	}
	got, _ = due(t, s, "pos", later, Never)
	sameIDs(t, "pos after the replay of A's dead head", got, a1[0].ID)
	record(t, s, a1[0].ID, &app.Attempt{Start: later, Status: 200}, app.Delivered, time.Time{})
	got, _ = due(t, s, "pos", later, Never)
	sameIDs(t, "pos once the replay went out", got, a3.ID)
}

// An order key with bytes that mean something to a key layout (a zero
// byte, a prefix of another key) makes its own group.
func testOrderKeyBytes(t *testing.T, open Opener) {
	s := open(t)
	x := acceptOrdered(t, s, "x1", T0, "customers", "a", "pos")[0]
	y := acceptOrdered(t, s, "y1", T0, "customers", "a\x00b", "pos")[0]
	z := acceptOrdered(t, s, "z1", T0, "customers", "ab", "pos")[0]
	record(t, s, x.ID, &app.Attempt{Start: T0, Status: 503}, app.Pending, T0.Add(time.Hour))
	got, _ := due(t, s, "pos", T0, Never)
	sameIDs(t, "keys a\\x00b and ab while a waits", got, y.ID, z.ID)
}

// A debounced route's pending delivery keeps the order key of the event
// that opened it (a merge does not change it) and its fired deliveries
// carry the route and the order key.
func testOrderDebounce(t *testing.T, open Opener) {
	s := open(t)
	for i, key := range []string{"A", "Z"} { // the merge brings another order key: the first stays
		o := op("c1")
		o.OrderKey = key
		e := NewEvent("shop", fmt.Sprint("d", i), T0.Add(time.Duration(i)*time.Second))
		mustAccept(t, s, e, &app.Plan{Debounce: []*app.DebounceOp{o}})
	}
	fire(t, s, T0.Add(time.Minute), 1, time.Time{})
	for _, dest := range []string{"pos", "erp"} {
		work, _, err := s.DueDeliveries(ctx, dest, T0.Add(time.Minute), 10, Never)
		if err != nil || len(work) != 1 {
			t.Fatalf("DueDeliveries(%s) = %+v, %v; want the fired delivery", dest, work, err)
		}
		if d := work[0].Delivery; d.Route != "customers" || d.OrderKey != "A" {
			t.Fatalf("fired delivery to %s: route %q, order key %q; want customers, A", dest, d.Route, d.OrderKey)
		}
	}
}
