package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// testRetryNow: a delivery waiting for its 30 m step becomes due now with
// its attempts and tries kept; delivered, dead and unknown ones are
// refused and change nothing; one in flight goes out once.
func testRetryNow(t *testing.T, open Opener) {
	s := open(t)
	step := T0.Add(30 * time.Minute)
	now := T0.Add(time.Minute)
	failed := func(t *testing.T, id uint64) {
		t.Helper()
		record(t, s, id, &app.Attempt{Start: T0, Duration: time.Second, Status: 503, Error: "HTTP 503"}, app.Pending, step)
	}

	t.Run("OK", func(t *testing.T) {
		_, ds := acceptRouted(t, s, "rn_1", "pos", "erp")
		failed(t, ds[0].ID)
		n, err := s.RetryNow(ctx, []uint64{ds[0].ID, ds[1].ID, ds[0].ID}, now) // erp's is due already: left as is
		if err != nil || n != 1 {
			t.Fatalf("RetryNow = %d, %v; want 1 moved (once, though named twice)", n, err)
		}
		d, attempts, err := s.Delivery(ctx, ds[0].ID)
		if err != nil || d.State != app.Pending || !d.Due.Equal(now) || d.Attempts != 1 || d.Tries != 1 || len(attempts) != 1 || attempts[0].Status != 503 {
			t.Fatalf("after RetryNow: %+v, attempts %+v, %v; want due %v, its attempt and try kept", d, attempts, err, now)
		}
		if d, _, _ := s.Delivery(ctx, ds[1].ID); !d.Due.Equal(T0) {
			t.Fatalf("a delivery due already moved to %v", d.Due)
		}
		work, next, err := s.DueDeliveries(ctx, "pos", now, 10, Never)
		if err != nil || len(work) != 1 || work[0].Delivery.ID != ds[0].ID || !next.IsZero() {
			t.Fatalf("DueDeliveries(pos) at the call = %+v, next %v, %v; want the retried delivery", work, next, err)
		}
		record(t, s, ds[0].ID, &app.Attempt{Start: now, Status: 200}, app.Delivered, time.Time{})
		if work, next, _ := s.DueDeliveries(ctx, "pos", step.Add(time.Hour), 10, Never); len(work) != 0 || !next.IsZero() {
			t.Fatalf("after delivery: %d due, next %v; the old due time must be gone from the outbox", len(work), next)
		}
		mustDrain(t, s, "erp", now)
	})

	t.Run("Refused", func(t *testing.T) {
		_, ds := acceptRouted(t, s, "rn_2", "pos", "pos", "pos")
		record(t, s, ds[0].ID, &app.Attempt{Start: T0, Status: 410}, app.Dead, time.Time{})
		record(t, s, ds[1].ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
		failed(t, ds[2].ID)
		_, err := s.RetryNow(ctx, []uint64{ds[2].ID, ds[0].ID}, now)
		if got, want := app.ErrorMessage(err), fmt.Sprintf("delivery %d is dead: replay it instead", ds[0].ID); app.ErrorCode(err) != app.ECONFLICT || got != want {
			t.Fatalf("RetryNow of a dead delivery: %v; want %s %q", err, app.ECONFLICT, want)
		}
		if _, err := s.RetryNow(ctx, []uint64{ds[1].ID}, now); app.ErrorCode(err) != app.ECONFLICT {
			t.Fatalf("RetryNow of a delivered delivery: %v; want %s", err, app.ECONFLICT)
		}
		if _, err := s.RetryNow(ctx, []uint64{ds[2].ID, 12345678}, now); !errors.Is(err, app.ErrNotFound) {
			t.Fatalf("RetryNow of an unknown delivery: %v; want ErrNotFound", err)
		}
		if d, _, _ := s.Delivery(ctx, ds[2].ID); !d.Due.Equal(step) {
			t.Fatalf("a refused call moved delivery %d to %v; want it left at %v", d.ID, d.Due, step)
		}
		if d, _, _ := s.Delivery(ctx, ds[0].ID); d.State != app.Dead {
			t.Fatalf("dead delivery is %s after a refused retry", d.State)
		}
		if n, err := s.RetryDestination(ctx, "pos", now); err != nil || n != 1 {
			t.Fatalf("RetryDestination(pos) = %d, %v; want 1 (the dead and the delivered ones are not waiting)", n, err)
		}
		mustDrain(t, s, "pos", now)
	})

	t.Run("Destination", func(t *testing.T) {
		var want []uint64
		for _, id := range []string{"rn_3", "rn_4", "rn_5"} {
			_, ds := acceptRouted(t, s, id, "crm", "erp")
			failed(t, ds[0].ID)
			failed(t, ds[1].ID)
			want = append(want, ds[0].ID)
		}
		if n, err := s.RetryDestination(ctx, "crm", now); err != nil || n != 3 {
			t.Fatalf("RetryDestination(crm) = %d, %v; want 3", n, err)
		}
		work, _, err := s.DueDeliveries(ctx, "crm", now, 10, Never)
		if err != nil || len(work) != 3 {
			t.Fatalf("DueDeliveries(crm) = %d, %v; want 3", len(work), err)
		}
		for i, w := range work {
			if w.Delivery.ID != want[i] || w.Delivery.Tries != 1 {
				t.Fatalf("due[%d] = %+v; want delivery %d, tries kept", i, w.Delivery, want[i])
			}
			record(t, s, w.Delivery.ID, &app.Attempt{Start: now, Status: 200}, app.Delivered, time.Time{})
		}
		if work, next, _ := s.DueDeliveries(ctx, "erp", now, 10, Never); len(work) != 0 || !next.Equal(step) {
			t.Fatalf("another destination's retries moved: %d due, next %v; want none until %v", len(work), next, step)
		}
		if n, err := s.RetryDestination(ctx, "nowhere", now); err != nil || n != 0 {
			t.Fatalf("RetryDestination(nowhere) = %d, %v; want 0", n, err)
		}
	})

	t.Run("InFlight", func(t *testing.T) {
		// Taken early (WaitingDeliveries: the retries of a destination that
		// answers again) while still due at its step, then retried now: it
		// must not go out a second time while it is being sent.
		_, ds := acceptRouted(t, s, "rn_6", "ops")
		failed(t, ds[0].ID)
		taken, err := s.WaitingDeliveries(ctx, "ops", time.Time{}, 0, 10, Never)
		if err != nil || len(taken) != 1 {
			t.Fatalf("WaitingDeliveries(ops) = %d, %v; want the waiting one", len(taken), err)
		}
		if _, err := s.RetryNow(ctx, []uint64{ds[0].ID}, now); err != nil {
			t.Fatalf("RetryNow of a delivery in flight: %v", err)
		}
		inFlight := func(id uint64) bool { return id == ds[0].ID } // the dispatcher's own lease
		if work, _, _ := s.DueDeliveries(ctx, "ops", now, 10, inFlight); len(work) != 0 {
			t.Fatalf("a delivery in flight was handed out again: %+v", work[0].Delivery)
		}
		record(t, s, ds[0].ID, &app.Attempt{Start: now, Status: 200}, app.Delivered, time.Time{})
		if work, next, _ := s.DueDeliveries(ctx, "ops", step.Add(time.Hour), 10, Never); len(work) != 0 || !next.IsZero() {
			t.Fatalf("after its attempt was recorded: %d due, next %v; want none", len(work), next)
		}
		if d, attempts, _ := s.Delivery(ctx, ds[0].ID); d.State != app.Delivered || len(attempts) != 2 {
			t.Fatalf("delivery %+v with %d attempts; want delivered after 2", d, len(attempts))
		}
	})
}

// mustDrain records a success for each delivery to dest due at now.
func mustDrain(t *testing.T, s storage.Store, dest string, now time.Time) {
	t.Helper()
	work, _, err := s.DueDeliveries(ctx, dest, now, 100, Never)
	if err != nil {
		t.Fatalf("DueDeliveries(%s): %v", dest, err)
	}
	for _, w := range work {
		record(t, s, w.Delivery.ID, &app.Attempt{Start: now, Status: 200}, app.Delivered, time.Time{})
	}
}
