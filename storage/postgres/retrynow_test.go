package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// A retry now through node B of a delivery node A holds (taken early, so
// due at its 30 m step) leaves A's lease alone: B cannot take it while A
// sends it. Once A gives it back (its attempt failed again), B's retry
// makes it due at once.
func TestRetryNow_LeasedOnOtherNode(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a := mustOpenURL(t, url, postgres.Options{Lease: time.Minute})
	b := mustOpenURL(t, url, postgres.Options{Lease: time.Minute})
	routed(t, a, "rn", 1)
	work, _, err := a.DueDeliveries(ctx, "pos", t0, 10, storetest.Never)
	if err != nil || len(work) != 1 {
		t.Fatalf("DueDeliveries = %d, %v", len(work), err)
	}
	id := work[0].Delivery.ID
	step := t0.Add(30 * time.Minute)
	if err := a.RecordAttempts(ctx, []app.AttemptRecord{{ID: id, Attempt: &app.Attempt{Start: t0, Status: 503}, State: app.Pending, Due: step}})[0]; err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Second)
	if taken, err := a.WaitingDeliveries(ctx, "pos", time.Time{}, 0, 10, storetest.Never); err != nil || len(taken) != 1 {
		t.Fatalf("node A WaitingDeliveries = %d, %v; want its retry, taken early", len(taken), err)
	}
	if n, err := b.RetryNow(ctx, []uint64{id}, now); err != nil || n != 0 {
		t.Fatalf("node B RetryNow of A's delivery = %d, %v; want 0 moved", n, err)
	}
	if n, err := b.RetryDestination(ctx, "pos", now); err != nil || n != 0 {
		t.Fatalf("node B RetryDestination = %d, %v; want 0 moved", n, err)
	}
	if w, _, err := b.DueDeliveries(ctx, "pos", now, 10, storetest.Never); err != nil || len(w) != 0 {
		t.Fatalf("node B got %d deliveries while A sends it, %v; want none", len(w), err)
	}
	if err := a.RecordAttempts(ctx, []app.AttemptRecord{{ID: id, Attempt: &app.Attempt{Start: now, Status: 503}, State: app.Pending, Due: step}})[0]; err != nil {
		t.Fatal(err)
	}
	if n, err := b.RetryNow(ctx, []uint64{id}, now); err != nil || n != 1 {
		t.Fatalf("node B RetryNow after A recorded = %d, %v; want 1", n, err)
	}
	if w, _, err := b.DueDeliveries(ctx, "pos", now, 10, storetest.Never); err != nil || len(w) != 1 || w[0].Delivery.Attempts != 2 {
		t.Fatalf("node B DueDeliveries = %d, %v; want the retried delivery with its 2 attempts", len(w), err)
	}
}

// A retry now on node A wakes node B (NOTIFY, as an accept does), so
// whichever node has a free slot sends it: B polls only hourly here, so
// only the notification can wake it.
func TestRetryNow_WakesOtherNodes(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	a := mustOpenURL(t, url, postgres.Options{Poll: time.Hour})
	b := mustOpenURL(t, url, postgres.Options{Poll: time.Hour})
	woke := make(chan time.Time, 100)
	b.OnOpened(func() { woke <- time.Now() })
	// B LISTENs right after Open: warm up until one of A's accepts is heard.
	for try := 0; ; try++ {
		e := storetest.NewEvent("shop", fmt.Sprint("warm-", try), t0)
		if _, err := a.Accept(ctx, e, t0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-woke:
		case <-time.After(500 * time.Millisecond):
			if try < 20 {
				continue
			}
			t.Fatal("node B never heard node A")
		}
		break
	}
	// One more, so that each call below has a waiting delivery to move.
	if _, err := a.Accept(ctx, storetest.NewEvent("shop", "second", t0), t0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")}); err != nil {
		t.Fatal(err)
	}
	work, _, err := a.DueDeliveries(ctx, "pos", t0, 100, storetest.Never)
	if err != nil || len(work) < 2 {
		t.Fatalf("DueDeliveries = %d, %v", len(work), err)
	}
	step := t0.Add(30 * time.Minute)
	var recs []app.AttemptRecord
	for _, w := range work {
		recs = append(recs, app.AttemptRecord{ID: w.Delivery.ID, Attempt: &app.Attempt{Start: t0, Status: 503}, State: app.Pending, Due: step})
	}
	for _, err := range a.RecordAttempts(ctx, recs) {
		if err != nil {
			t.Fatal(err)
		}
	}
	for len(woke) > 0 {
		<-woke
	}
	for _, call := range []struct {
		name string
		run  func() (int, error)
	}{
		{"RetryNow", func() (int, error) { return a.RetryNow(ctx, []uint64{work[0].Delivery.ID}, t0.Add(time.Second)) }},
		{"RetryDestination", func() (int, error) { return a.RetryDestination(ctx, "pos", t0.Add(time.Second)) }},
	} {
		began := time.Now()
		if n, err := call.run(); err != nil || n == 0 {
			t.Fatalf("%s on node A = %d, %v; want some moved", call.name, n, err)
		}
		select {
		case at := <-woke:
			t.Logf("%s called on node A → node B woken in %v", call.name, at.Sub(began))
		case <-time.After(10 * time.Second):
			t.Fatalf("node B was not woken by node A's %s", call.name)
		}
	}
}
