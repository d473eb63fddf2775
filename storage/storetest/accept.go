package storetest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
)

func testAccept(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		s := open(t)
		e := NewEvent("shop", "evt_1", T0)
		mustAccept(t, s, e, nil)
		got, err := s.Event(ctx, e.Seq)
		if err != nil || got == nil {
			t.Fatalf("Event(%d) = %v, %v", e.Seq, got, err)
		}
		if string(got.Body) != string(e.Body) || got.ID != "evt_1" || got.Source != "shop" || got.Topic != "orders/create" || got.Seq != e.Seq {
			t.Fatalf("stored event = %+v, want %+v", got, e)
		}
		if !got.ReceivedAt.Equal(T0) || !slices.Equal(got.Header, e.Header) {
			t.Fatalf("stored event = %+v, want %+v", got, e)
		}
		exp, seq, ok, err := s.LookupID(ctx, "shop", "evt_1")
		if err != nil || !ok || seq != e.Seq || !exp.Equal(T0.Add(time.Hour)) {
			t.Fatalf("LookupID = %v %d %v %v", exp, seq, ok, err)
		}
		if _, _, ok, err := s.LookupID(ctx, "shop", "evt_2"); ok || err != nil {
			t.Fatalf("LookupID of an unknown id = %v, %v", ok, err)
		}
		if e, err := s.Event(ctx, e.Seq+1000); e != nil || err != nil {
			t.Fatalf("Event of an unknown seq = %+v, %v; want nil, nil", e, err)
		}
		if err := s.Ping(ctx); err != nil {
			t.Fatalf("Ping: %v", err)
		}
	})
	t.Run("EmptyAndBinary", func(t *testing.T) {
		s := open(t)
		e := &app.Event{Source: "shop", ID: "evt_bin", ReceivedAt: T0, Body: []byte{0, 1, 2, 0xff, '\n', 0}}
		mustAccept(t, s, e, nil)
		empty := &app.Event{Source: "shop", ID: "evt_empty", ReceivedAt: T0}
		mustAccept(t, s, empty, nil)
		if got, _ := s.Event(ctx, e.Seq); got == nil || string(got.Body) != string(e.Body) || len(got.Header) != 0 || got.Topic != "" {
			t.Fatalf("binary body stored as %+v", got)
		}
		if got, _ := s.Event(ctx, empty.Seq); got == nil || len(got.Body) != 0 {
			t.Fatalf("empty body stored as %+v", got)
		}
	})
	t.Run("Duplicate", func(t *testing.T) {
		s := open(t)
		mustAccept(t, s, NewEvent("shop", "evt_1", T0), nil)
		e := NewEvent("shop", "evt_1", T0.Add(time.Minute))
		dup, err := s.Accept(ctx, e, T0.Add(time.Hour+time.Minute), &app.Plan{Direct: app.DirectTo("pos")})
		if err != nil || !dup {
			t.Fatalf("Accept = %v, %v; want duplicate", dup, err)
		}
		if _, events := counts(t, s); events != 1 {
			t.Fatalf("events = %d, want 1", events)
		}
		if n, _ := s.CountPending(ctx); n != 0 {
			t.Fatalf("a duplicate opened %d deliveries", n)
		}
		// The first acceptance's expiry stands.
		if exp, _, _, _ := s.LookupID(ctx, "shop", "evt_1"); !exp.Equal(T0.Add(time.Hour)) {
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
		if n, err := s.ForgetExpiredIDs(ctx, T0.Add(90*time.Minute), 100); err != nil || n != 0 {
			t.Fatalf("ForgetExpiredIDs = %d, %v; want 0", n, err)
		}
		exp, seq, ok, _ := s.LookupID(ctx, "shop", "evt_1")
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
			dup, err := s.Accept(ctx, e, T0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")})
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
	if n, _ := s.CountPending(ctx); n != 1 {
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
	plan := &app.Plan{Direct: app.DirectTo("pos"), Debounce: []*app.DebounceOp{
		{Route: "r", Key: "fine", Delay: time.Second, To: []string{"erp"}},
		{Route: "r", Key: hugeKey(), Delay: time.Second, To: []string{"erp"}},
	}}
	if _, err := s.Accept(ctx, e, T0.Add(time.Hour), plan); err == nil {
		t.Fatal("an accept with an unstorable debounce key succeeded")
	}
	if ids, events := counts(t, s); ids != 0 || events != 0 {
		t.Fatalf("after a failed accept: %d ids, %d events; want none", ids, events)
	}
	if _, _, ok, _ := s.LookupID(ctx, "shop", "evt_atomic"); ok {
		t.Fatal("the id of a failed accept is remembered")
	}
	if n, _ := s.CountPending(ctx); n != 0 {
		t.Fatalf("a failed accept left %d pending deliveries", n)
	}
	if n, _ := s.PendingCount(ctx); n != 0 {
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
	mustAccept(t, s, NewEvent("shop", "routed", T0), &app.Plan{Direct: app.DirectTo("pos")})
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("OnOpened not called after an accept that opened a delivery")
	}
}
