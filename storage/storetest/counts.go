package storetest

import (
	"fmt"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// Reopener opens a fresh, empty store for t (closed when t ends), and
// gives a function that closes a store it opened and opens the same data
// again: a restart.
type Reopener func(t *testing.T) (s storage.Store, reopen func(t *testing.T, s storage.Store) storage.Store)

// RunCounts runs the tests of the hourly counts (app.CountStore): what a
// store counts in its own commits, what AddCounts adds, that a restart
// keeps both, and pruning.
func RunCounts(t *testing.T, open Reopener) {
	t.Run("InCommits", func(t *testing.T) { testCountsInCommits(t, open) })
	t.Run("Hours", func(t *testing.T) { testCountsHours(t, open) })
	t.Run("Concurrent", func(t *testing.T) { testCountsConcurrent(t, open) })
	t.Run("SurviveRestart", func(t *testing.T) { testCountsRestart(t, open) })
	t.Run("Prune", func(t *testing.T) { testCountsPrune(t, open) })
	t.Run("Retrying", func(t *testing.T) { testCountRetrying(t, open) })
}

// Retrying counts the pending deliveries that failed an attempt, not the
// attempts, and not those that were never tried or are done.
func testCountRetrying(t *testing.T, open Reopener) {
	s, _ := open(t)
	_, ds := acceptRouted(t, s, "r1", "a", "b", "c", "d")
	acceptRouted(t, s, "r2", "a") // never tried
	for i := range 3 {            // three failed attempts of one delivery
		record(t, s, ds[0].ID, &app.Attempt{Start: T0, Status: 500}, app.Pending, T0.Add(time.Duration(i+1)*time.Minute))
	}
	record(t, s, ds[1].ID, &app.Attempt{Start: T0, Status: 503}, app.Pending, T0.Add(time.Minute))
	record(t, s, ds[2].ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	record(t, s, ds[3].ID, &app.Attempt{Start: T0, Status: 410}, app.Dead, time.Time{})
	for _, tc := range []struct{ limit, want int }{{100, 2}, {1, 1}} {
		if n, err := s.CountRetrying(ctx, tc.limit); err != nil || n != tc.want {
			t.Errorf("CountRetrying(%d) = %d, %v; want %d", tc.limit, n, err, tc.want)
		}
	}
}

// kinds builds counts from kind, n pairs.
func kinds(kv ...any) app.Counts {
	var c app.Counts
	for i := 0; i+1 < len(kv); i += 2 {
		c[kv[i].(app.Kind)] = uint64(kv[i+1].(int))
	}
	return c
}

// hours reads the counts of the day before T0 to a day after, failing t on
// an error.
func hours(t *testing.T, s storage.Store) []app.HourCounts {
	t.Helper()
	hs, err := s.HourlyCounts(ctx, T0.Add(-24*time.Hour), T0.Add(24*time.Hour))
	if err != nil {
		t.Fatalf("HourlyCounts: %v", err)
	}
	return hs
}

func showHours(hs []app.HourCounts) string {
	s := ""
	for _, h := range hs {
		s += fmt.Sprintf("\n  %s %v", h.Hour.Format(time.RFC3339), h.Counts)
	}
	return s
}

func wantHours(t *testing.T, got []app.HourCounts, want ...app.HourCounts) {
	t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Hour.Equal(want[i].Hour) && got[i].Counts == want[i].Counts
	}
	if !ok {
		t.Fatalf("hourly counts:%s\nwant:%s", showHours(got), showHours(want))
	}
}

// fillHour does, in T0's hour, what the store counts: 4 events accepted
// (one merged into another's pending delivery), a duplicate (not counted
// by the store), attempts that deliver, will retry and end dead; and what
// AddCounts adds.
func fillHour(t *testing.T, s storage.Store) app.Counts {
	at := T0.Add(10 * time.Minute)
	mustAccept(t, s, NewEvent("shop", "d1", at), debounced("k", time.Minute))
	mustAccept(t, s, NewEvent("shop", "d2", at.Add(time.Second)), debounced("k", time.Minute))
	e := NewEvent("shop", "p1", at)
	mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos", "erp")})
	if dup, err := s.Accept(ctx, NewEvent("shop", "p1", at), at.Add(time.Hour), nil); err != nil || !dup {
		t.Fatalf("Accept again = %v, %v; want a duplicate", dup, err)
	}
	mustAccept(t, s, NewEvent("shop", "u1", at), nil)
	ds := deliveries(t, s, e.Seq, 2)
	record(t, s, ds[0].ID, &app.Attempt{Start: at, Duration: time.Second, Status: 200}, app.Delivered, time.Time{})
	record(t, s, ds[1].ID, &app.Attempt{Start: at, Duration: time.Second, Status: 500}, app.Pending, at.Add(time.Minute))
	record(t, s, ds[1].ID, &app.Attempt{Start: at.Add(time.Minute), Status: 410}, app.Dead, time.Time{})
	s.AddCounts(at, kinds(app.KindReceived, 3, app.KindDuplicate, 1, app.KindRejected, 2))
	return kinds(app.KindReceived, 7, app.KindAccepted, 4, app.KindDuplicate, 1, app.KindRejected, 2, app.KindDebounced, 1,
		app.KindDelivered, 1, app.KindRetrying, 1, app.KindDead, 1)
}

// InCommits: accepts and attempts count in the hour they happened, a
// duplicate does not, and what AddCounts adds shows at once.
func testCountsInCommits(t *testing.T, open Reopener) {
	s, _ := open(t)
	wantHours(t, hours(t, s))
	want := fillHour(t, s)
	wantHours(t, hours(t, s), app.HourCounts{Hour: T0, Counts: want})
}

// Hours: each hour is counted apart, oldest first, and only the hours
// asked for are returned.
func testCountsHours(t *testing.T, open Reopener) {
	s, _ := open(t)
	for i, at := range []time.Time{T0.Add(-3 * time.Hour), T0.Add(-time.Second), T0, T0.Add(59 * time.Minute), T0.Add(2 * time.Hour)} {
		mustAccept(t, s, NewEvent("shop", fmt.Sprint("h", i), at), nil)
	}
	one := kinds(app.KindReceived, 1, app.KindAccepted, 1)
	two := kinds(app.KindReceived, 2, app.KindAccepted, 2)
	wantHours(t, hours(t, s),
		app.HourCounts{Hour: T0.Add(-3 * time.Hour), Counts: one},
		app.HourCounts{Hour: T0.Add(-time.Hour), Counts: one},
		app.HourCounts{Hour: T0, Counts: two},
		app.HourCounts{Hour: T0.Add(2 * time.Hour), Counts: one})
	hs, err := s.HourlyCounts(ctx, T0.Add(-time.Hour), T0.Add(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	wantHours(t, hs, app.HourCounts{Hour: T0.Add(-time.Hour), Counts: one}, app.HourCounts{Hour: T0, Counts: two})
}

// Concurrent: accepts committed together, and AddCounts beside them, are
// each counted once.
func testCountsConcurrent(t *testing.T, open Reopener) {
	s, _ := open(t)
	const n = 200
	InParallel(t, n, func(i int) error {
		s.AddCounts(T0, kinds(app.KindReceived, 1, app.KindRejected, 1))
		_, err := s.Accept(ctx, NewEvent("shop", fmt.Sprint("c", i), T0), T0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")})
		return err
	})
	wantHours(t, hours(t, s), app.HourCounts{Hour: T0, Counts: kinds(app.KindReceived, 2*n, app.KindAccepted, n, app.KindRejected, n)})
}

// SurviveRestart: closing and opening the store again shows the same
// counts, those AddCounts took included.
func testCountsRestart(t *testing.T, open Reopener) {
	s, reopen := open(t)
	want := fillHour(t, s)
	mustAccept(t, s, NewEvent("shop", "later", T0.Add(time.Hour)), nil)
	before := hours(t, s)
	wantHours(t, before, app.HourCounts{Hour: T0, Counts: want},
		app.HourCounts{Hour: T0.Add(time.Hour), Counts: kinds(app.KindReceived, 1, app.KindAccepted, 1)})
	// Added after the last commit: only Close writes these.
	s.AddCounts(T0.Add(time.Hour), kinds(app.KindReceived, 1, app.KindRejected, 1))
	before = hours(t, s)
	s = reopen(t, s)
	wantHours(t, hours(t, s), before...)
	s = reopen(t, s)
	wantHours(t, hours(t, s), before...)
}

// Prune forgets the hours that ended, written or only added.
func testCountsPrune(t *testing.T, open Reopener) {
	s, _ := open(t)
	mustAccept(t, s, NewEvent("shop", "old", T0.Add(-2*time.Hour)), nil)
	mustAccept(t, s, NewEvent("shop", "now", T0), nil)
	s.AddCounts(T0.Add(-time.Hour), kinds(app.KindRejected, 1))
	s.AddCounts(T0, kinds(app.KindRejected, 1))
	if _, err := s.PruneCounts(ctx, T0); err != nil {
		t.Fatal(err)
	}
	wantHours(t, hours(t, s), app.HourCounts{Hour: T0, Counts: kinds(app.KindReceived, 1, app.KindAccepted, 1, app.KindRejected, 1)})
	if _, err := s.PruneCounts(ctx, T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantHours(t, hours(t, s))
}
