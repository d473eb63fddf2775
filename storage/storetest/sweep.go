package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"hookbox/app"
)

func testDeleteEventsBefore(t *testing.T, open Opener) {
	s := open(t)
	for i := range 10 {
		at := T0.Add(time.Duration(i) * time.Minute)
		mustAccept(t, s, NewEvent("shop", fmt.Sprint(i), at), nil)
	}
	n, err := s.DeleteEventsBefore(ctx, T0.Add(5*time.Minute), 3)
	if err != nil || n != 3 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 3 (the limit)", n, err)
	}
	n, err = s.DeleteEventsBefore(ctx, T0.Add(5*time.Minute), 100)
	if err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 2", n, err)
	}
	if _, events := counts(t, s); events != 5 {
		t.Fatalf("events left = %d, want 5", events)
	}
	rows, _, _ := s.ListEvents(ctx, app.EventQuery{Limit: 100})
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
		mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
		seqs = append(seqs, e.Seq)
		d := deliveries(t, s, e.Seq, 1)[0]
		ids = append(ids, d.ID)
		if state != app.Pending {
			record(t, s, d.ID, &app.Attempt{Start: T0}, state, time.Time{})
		}
	}
	n, err := s.DeleteEventsBefore(ctx, T0.Add(time.Minute), 100)
	if err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 2 (the delivered ones)", n, err)
	}
	for i, want := range []bool{false, true, true, false} {
		e, _ := s.Event(ctx, seqs[i])
		if (e != nil) != want {
			t.Errorf("event %d kept = %v, want %v", i, e != nil, want)
		}
		ds, _ := s.EventDeliveries(ctx, seqs[i])
		if (len(ds) > 0) != want {
			t.Errorf("event %d deliveries %+v", i, ds)
		}
		if _, _, err := s.Delivery(ctx, ids[i]); (err == nil) != want || !want && !errors.Is(err, app.ErrNotFound) {
			t.Errorf("delivery of event %d: %v", i, err)
		}
	}
	if n, _ := s.CountDead(ctx); n != 1 {
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
		mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
		d := deliveries(t, s, e.Seq, 1)[0]
		record(t, s, d.ID, &app.Attempt{Start: old, Status: 200}, app.Delivered, time.Time{})
		f := NewEvent("shop", fmt.Sprint("deb-", i), old)
		mustAccept(t, s, f, &app.Plan{Debounce: []*app.DebounceOp{{Route: "r", Key: fmt.Sprint("k", i), Delay: time.Millisecond, To: []string{"erp"}}}})
		var replayErr error
		start := make(chan struct{})
		wg.Go(func() { <-start; replayErr = s.Replay(ctx, d.ID, T0.Add(time.Hour)) })
		wg.Go(func() { <-start; s.FirePending(ctx, T0.Add(time.Hour)) })
		wg.Go(func() {
			<-start
			if _, err := s.DeleteEventsBefore(ctx, T0.Add(time.Minute), 10); err != nil {
				t.Error(err)
			}
		})
		close(start)
		wg.Wait()
		s.FirePending(ctx, T0.Add(time.Hour)) // whatever did not fire in the race
		ev, _ := s.Event(ctx, e.Seq)
		_, _, derr := s.Delivery(ctx, d.ID)
		switch {
		case replayErr == nil && (ev == nil || derr != nil):
			t.Fatalf("round %d: the replay succeeded, but the event (%v) or the delivery (%v) is gone", i, ev != nil, derr)
		case replayErr != nil && !errors.Is(replayErr, app.ErrNotFound):
			t.Fatalf("round %d: replay: %v", i, replayErr)
		case (ev == nil) != (derr != nil):
			t.Fatalf("round %d: event kept %v, delivery: %v", i, ev != nil, derr)
		}
		fv, _ := s.Event(ctx, f.Seq)
		if ds, _ := s.EventDeliveries(ctx, f.Seq); fv == nil || len(ds) != 1 || ds[0].State != app.Pending {
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
		n, err := s.ForgetExpiredIDs(ctx, now, chunk)
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
