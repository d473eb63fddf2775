package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

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
	fired, next, err := s.FirePending(ctx, now)
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
	if n, _ := s.PendingCount(ctx); n != 2 {
		t.Fatalf("PendingCount = %d, want 2", n)
	}
	if n, _ := s.CountPending(ctx); n != 2 {
		t.Fatalf("CountPending = %d, want 2 (debounced ones count)", n)
	}
	// While the window is open, the merged event is carried by the latest.
	if by, err := s.CarriedBy(ctx, seq1); err != nil || by != seq2 {
		t.Fatalf("CarriedBy(u1) with the window open = %d, %v; want u2 %d", by, err, seq2)
	}
	fire(t, s, T0.Add(9*time.Second), 0, T0.Add(10*time.Second))
	fire(t, s, T0.Add(10*time.Second), 1, T0.Add(12*time.Second))
	ds := deliveries(t, s, seq2, 2)
	if ds[0].Due.After(T0.Add(10*time.Second)) || ds[0].State != app.Pending {
		t.Fatalf("fired deliveries = %+v", ds[0])
	}
	deliveries(t, s, seq1, 0)
	if merged, err := s.MergedInto(ctx, seq2); err != nil || !slices.Equal(merged, []uint64{seq1}) {
		t.Fatalf("MergedInto = %v, %v; want [%d]", merged, err, seq1)
	}
	// MergedInto the other way: the merged event links to the one sent.
	if by, err := s.CarriedBy(ctx, seq1); err != nil || by != seq2 {
		t.Fatalf("CarriedBy(u1) = %d, %v; want u2 %d", by, err, seq2)
	}
	if by, err := s.CarriedBy(ctx, seq2); err != nil || by != 0 {
		t.Fatalf("CarriedBy(u2), the event sent = %d, %v; want 0", by, err)
	}
	work, _, _ := s.DueDeliveries(ctx, "pos", T0.Add(10*time.Second), 10, Never)
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
	if merged, _ := s.MergedInto(ctx, seq5); len(merged) != 1 || merged[0] != seq4 {
		t.Fatalf("MergedInto(u5) = %v, want [u4 %d]", merged, seq4)
	}
	if by, err := s.CarriedBy(ctx, seq4); err != nil || by != seq5 {
		t.Fatalf("CarriedBy(u4) = %d, %v; want u5 %d", by, err, seq5)
	}
	// The deferred send took a slot at T0+1m: the window holds 0:11 and
	// 1:00, so the next one defers to 1:11.
	if _, r := acceptDebounced(t, s, "u6", "c1", T0.Add(61*time.Second)); r != app.Deferred {
		t.Fatalf("after the deferred send: %d, want Deferred", r)
	}
	fire(t, s, T0.Add(70*time.Second), 0, T0.Add(71*time.Second))
	if n, _ := s.PendingCount(ctx); n != 1 {
		t.Fatalf("PendingCount = %d, want 1", n)
	}
}

// A merged event names the event whose delivery carries it: the latest
// of its window while the window is open (after any number of merges),
// the one sent once it fired; the one sent names none.
func testCarriedBy(t *testing.T, open Opener) {
	s := open(t)
	var seqs []uint64
	for i := range 3 {
		seq, r := acceptDebounced(t, s, fmt.Sprint("c", i), "k", T0.Add(time.Duration(i)*time.Second))
		if want := map[bool]app.DebounceResult{true: app.Opened, false: app.Merged}[i == 0]; r != want {
			t.Fatalf("event %d: %d, want %d", i, r, want)
		}
		seqs = append(seqs, seq)
	}
	check := func(when string) {
		t.Helper()
		for i, want := range []uint64{seqs[2], seqs[2], 0} {
			if by, err := s.CarriedBy(ctx, seqs[i]); err != nil || by != want {
				t.Fatalf("%s: CarriedBy(c%d) = %d, %v; want %d", when, i, by, err, want)
			}
		}
	}
	check("window open")
	fire(t, s, T0.Add(10*time.Second), 1, time.Time{})
	check("sent")
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
		if _, _, cerr := s.Counts(ctx); err == nil { // settled: the step's Result is decided
			err = cerr
		}
		mu.Lock()
		results[o.Result]++
		mu.Unlock()
		return err
	})
	if results[app.Opened] != 1 || results[app.Merged] != 99 {
		t.Fatalf("results %v; want 1 opened, 99 merged", results)
	}
	if n, _ := s.PendingCount(ctx); n != 1 {
		t.Fatalf("PendingCount = %d, want 1", n)
	}
	fire(t, s, T0.Add(10*time.Second), 1, time.Time{})
	if n, _ := s.CountPending(ctx); n != 2 {
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
	if n, err := s.PruneWindows(ctx, T0.Add(4*time.Minute+30*time.Second), 3); err != nil || n != 3 {
		t.Fatalf("PruneWindows = %d, %v; want 3 (the limit)", n, err)
	}
	if n, err := s.PruneWindows(ctx, T0.Add(4*time.Minute+30*time.Second), 100); err != nil || n != 1 {
		t.Fatalf("PruneWindows = %d, %v; want 1", n, err)
	}
	if n, err := s.PruneWindows(ctx, T0.Add(10*time.Minute), 100); err != nil || n != 1 {
		t.Fatalf("PruneWindows = %d, %v; want the last one", n, err)
	}
	// A pruned key starts a fresh window.
	if _, r := acceptDebounced(t, s, "w5", "k0", T0.Add(11*time.Minute)); r != app.Opened {
		t.Fatalf("after pruning: %d, want Opened", r)
	}
}
