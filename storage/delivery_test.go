package storage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"hookbox/app"
)

func never(uint64) bool { return false }

func TestDB_Outbox(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	e := newEvent("shop", "evt_1", t0)
	if _, err := db.Accept(ctx, e, t0.Add(time.Hour), &app.Plan{Direct: []string{"pos", "erp"}}); err != nil {
		t.Fatal(err)
	}
	ds, err := db.EventDeliveries(e.Seq)
	if err != nil || len(ds) != 2 || ds[0].Destination != "pos" || ds[1].Destination != "erp" || ds[0].State != app.Pending {
		t.Fatalf("deliveries = %+v, %v", ds, err)
	}

	t.Run("DuePerDestination", func(t *testing.T) {
		work, next, err := db.DueDeliveries("pos", t0, 10, never)
		if err != nil || len(work) != 1 || !next.IsZero() {
			t.Fatalf("DueDeliveries = %+v, %v, %v", work, next, err)
		}
		if w := work[0]; w.Delivery.ID != ds[0].ID || string(w.Event.Body) != string(e.Body) || w.Event.Seq != e.Seq {
			t.Fatalf("work = %+v", w)
		}
		// Not yet due one second earlier; skipped when in flight.
		if work, next, _ := db.DueDeliveries("pos", t0.Add(-time.Second), 10, never); len(work) != 0 || !next.Equal(t0) {
			t.Fatalf("early: %d items, next %v", len(work), next)
		}
		if work, _, _ := db.DueDeliveries("pos", t0, 10, func(id uint64) bool { return id == ds[0].ID }); len(work) != 0 {
			t.Fatalf("in-flight delivery returned: %+v", work)
		}
	})
	t.Run("RetryThenDead", func(t *testing.T) {
		due := t0.Add(time.Minute)
		a := &app.Attempt{Start: t0, Duration: time.Second, Status: 500, Error: "HTTP 500", Response: []byte("oops")}
		if err := db.RecordAttempt(ds[0].ID, a, app.Pending, due); err != nil {
			t.Fatal(err)
		}
		if work, next, _ := db.DueDeliveries("pos", t0.Add(30*time.Second), 10, never); len(work) != 0 || !next.Equal(due) {
			t.Fatalf("after retry scheduled: %d items, next %v; want none, next %v", len(work), next, due)
		}
		if err := db.RecordAttempt(ds[0].ID, &app.Attempt{Start: due, Error: "timeout"}, app.Dead, time.Time{}); err != nil {
			t.Fatal(err)
		}
		d, attempts, err := db.Delivery(ds[0].ID)
		if err != nil || d.State != app.Dead || d.Attempts != 2 || d.Tries != 2 || len(attempts) != 2 || attempts[0].Status != 500 ||
			string(attempts[0].Response) != "oops" || attempts[1].Error != "timeout" || attempts[1].N != 2 {
			t.Fatalf("delivery = %+v, attempts %+v, %v", d, attempts, err)
		}
		if work, _, _ := db.DueDeliveries("pos", t0.Add(time.Hour), 10, never); len(work) != 0 {
			t.Fatal("dead delivery is due")
		}
		if n, _ := db.CountDead(); n != 1 {
			t.Fatalf("CountDead = %d", n)
		}
	})
	t.Run("Replay", func(t *testing.T) {
		now := t0.Add(2 * time.Hour)
		if n, err := db.ReplayDead(now); err != nil || n != 1 {
			t.Fatalf("ReplayDead = %d, %v", n, err)
		}
		d, attempts, _ := db.Delivery(ds[0].ID)
		if d.State != app.Pending || d.Tries != 0 || d.Attempts != 2 || len(attempts) != 2 {
			t.Fatalf("after replay %+v", d)
		}
		if work, _, _ := db.DueDeliveries("pos", now, 10, never); len(work) != 1 {
			t.Fatal("replayed delivery not due")
		}
		if err := db.Replay(12345, now); err == nil {
			t.Fatal("replay of an unknown delivery succeeded")
		}
	})
}

// Delivered events are pruned after retention; pending and dead ones stay.
func TestDB_DeleteEventsBefore_KeepsUndelivered(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	var seqs []uint64
	for i, state := range []app.DeliveryState{app.Delivered, app.Pending, app.Dead, app.Delivered} {
		e := newEvent("shop", string(rune('a'+i)), t0.Add(time.Duration(i)*time.Second))
		if _, err := db.Accept(ctx, e, t0.Add(time.Hour), &app.Plan{Direct: []string{"pos"}}); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
		ds, _ := db.EventDeliveries(e.Seq)
		if state != app.Pending {
			if err := db.RecordAttempt(ds[0].ID, &app.Attempt{Start: t0}, state, time.Time{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	n, err := db.DeleteEventsBefore(t0.Add(time.Minute), 100)
	if err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 2 (the delivered ones)", n, err)
	}
	for i, want := range []bool{false, true, true, false} {
		e, _ := db.Event(seqs[i])
		if (e != nil) != want {
			t.Errorf("event %d kept = %v, want %v", i, e != nil, want)
		}
		ds, _ := db.EventDeliveries(seqs[i])
		if (len(ds) > 0) != want {
			t.Errorf("event %d deliveries %+v", i, ds)
		}
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// A batch of attempts shares one write; a record whose delivery is gone
// fails alone and the others are stored.
func TestDB_RecordAttempts(t *testing.T) {
	db := MustOpenDB(t)
	e := newEvent("shop", "batch-1", t0)
	if _, err := db.Accept(context.Background(), e, t0.Add(time.Hour), &app.Plan{Direct: []string{"pos", "erp"}}); err != nil {
		t.Fatal(err)
	}
	ds, err := db.EventDeliveries(e.Seq)
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries = %+v, %v", ds, err)
	}
	retry := t0.Add(time.Minute)
	recs := []app.AttemptRecord{
		{ID: ds[0].ID, Attempt: &app.Attempt{Start: t0, Status: 200}, State: app.Delivered},
		{ID: 999_999, Attempt: &app.Attempt{Start: t0, Status: 200}, State: app.Delivered},
		{ID: ds[1].ID, Attempt: &app.Attempt{Start: t0, Status: 503, Error: "HTTP 503"}, State: app.Pending, Due: retry},
	}
	errs := db.RecordAttempts(recs)
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], app.ErrNotFound) || errs[2] != nil {
		t.Fatalf("errs = %v; want nil, not found, nil", errs)
	}
	if recs[0].Attempt.N != 1 || recs[2].Attempt.N != 1 {
		t.Fatalf("attempt numbers %d, %d; want 1, 1", recs[0].Attempt.N, recs[2].Attempt.N)
	}
	if d, attempts, err := db.Delivery(ds[0].ID); err != nil || d.State != app.Delivered || len(attempts) != 1 || attempts[0].Status != 200 {
		t.Fatalf("pos: %+v, %+v, %v", d, attempts, err)
	}
	if d, _, err := db.Delivery(ds[1].ID); err != nil || d.State != app.Pending || !d.Due.Equal(retry) || d.LastStatus != 503 {
		t.Fatalf("erp: %+v, %v", d, err)
	}
	if work, next, _ := db.DueDeliveries("erp", t0, 10, never); len(work) != 0 || !next.Equal(retry) {
		t.Fatalf("erp due now: %d items, next %v; want none until %v", len(work), next, retry)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// WaitingDeliveries reads a destination's pending deliveries in due order,
// due or not, from a position on; an Early attempt keeps the delivery's
// step in its schedule.
func TestDB_WaitingDeliveries(t *testing.T) {
	db := MustOpenDB(t)
	var ids []uint64
	for i := range 3 {
		e := newEvent("shop", string(rune('a'+i)), t0)
		if _, err := db.Accept(context.Background(), e, t0.Add(time.Hour), &app.Plan{Direct: []string{"pos"}}); err != nil {
			t.Fatal(err)
		}
		ds, _ := db.EventDeliveries(e.Seq)
		// Retries due in 3h, 2h, 1h: due order is the reverse of ids.
		due := t0.Add(time.Duration(3-i) * time.Hour)
		if err := db.RecordAttempt(ds[0].ID, &app.Attempt{Start: t0, Status: 503}, app.Pending, due); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ds[0].ID)
	}
	work, err := db.WaitingDeliveries("pos", time.Time{}, 0, 2, never)
	if err != nil || len(work) != 2 || work[0].Delivery.ID != ids[2] || work[1].Delivery.ID != ids[1] || work[0].Event.ID != "c" {
		t.Fatalf("first two waiting = %+v, %v", work, err)
	}
	last := work[1].Delivery
	work, err = db.WaitingDeliveries("pos", last.Due, last.ID, 2, never)
	if err != nil || len(work) != 1 || work[0].Delivery.ID != ids[0] {
		t.Fatalf("after the second = %+v, %v", work, err)
	}
	if work, _ := db.WaitingDeliveries("erp", time.Time{}, 0, 2, never); len(work) != 0 {
		t.Fatalf("another destination's: %+v", work)
	}
	early := app.AttemptRecord{ID: ids[0], Attempt: &app.Attempt{Start: t0.Add(time.Minute), Status: 503}, State: app.Pending, Due: t0.Add(3 * time.Hour), Early: true}
	if errs := db.RecordAttempts([]app.AttemptRecord{early}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if d, _, _ := db.Delivery(ids[0]); d.Tries != 1 || d.Attempts != 2 || !d.Due.Equal(t0.Add(3*time.Hour)) {
		t.Fatalf("after an early attempt: %+v; want 2 attempts, still at step 1", d)
	}
}
