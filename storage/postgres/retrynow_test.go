package postgres_test

import (
	"context"
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
