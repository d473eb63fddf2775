package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

func testOutbox(t *testing.T, open Opener) {
	s := open(t)
	e, ds := acceptRouted(t, s, "evt_1", "pos", "erp")
	if ds[0].Destination != "pos" || ds[1].Destination != "erp" || ds[0].State != app.Pending || ds[0].EventSeq != e.Seq ||
		!ds[0].Due.Equal(T0) || !ds[0].Created.Equal(T0) || ds[0].Attempts != 0 {
		t.Fatalf("deliveries = %+v, %+v", ds[0], ds[1])
	}
	if n, _ := s.CountPending(ctx); n != 2 {
		t.Fatalf("CountPending = %d, want 2", n)
	}
	if n, _ := s.Backlog(ctx, "pos", 10); n != 1 {
		t.Fatalf("Backlog(pos) = %d, want 1", n)
	}

	t.Run("DuePerDestination", func(t *testing.T) {
		// Not yet due one second earlier; skipped when in flight.
		if work, next, _ := s.DueDeliveries(ctx, "pos", T0.Add(-time.Second), 10, Never); len(work) != 0 || !next.Equal(T0) {
			t.Fatalf("early: %d items, next %v", len(work), next)
		}
		if work, _, _ := s.DueDeliveries(ctx, "pos", T0, 10, func(id uint64) bool { return id == ds[0].ID }); len(work) != 0 {
			t.Fatalf("in-flight delivery returned: %+v", work)
		}
		work, next, err := s.DueDeliveries(ctx, "pos", T0, 10, Never)
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
		if work, next, _ := s.DueDeliveries(ctx, "pos", T0.Add(30*time.Second), 10, Never); len(work) != 0 || !next.Equal(due) {
			t.Fatalf("after retry scheduled: %d items, next %v; want none, next %v", len(work), next, due)
		}
		work, _, _ := s.DueDeliveries(ctx, "pos", due, 10, Never)
		if len(work) != 1 || work[0].Delivery.Tries != 1 || work[0].Delivery.Attempts != 1 || !work[0].Delivery.Due.Equal(due) {
			t.Fatalf("the retry at its due time: %+v", work)
		}
		record(t, s, ds[0].ID, &app.Attempt{Start: due, Error: "timeout"}, app.Dead, time.Time{})
		d, attempts, err := s.Delivery(ctx, ds[0].ID)
		if err != nil || d.State != app.Dead || d.Attempts != 2 || d.Tries != 2 || len(attempts) != 2 || attempts[0].Status != 500 ||
			string(attempts[0].Response) != "oops" || attempts[0].Duration != time.Second || !attempts[0].Start.Equal(T0) ||
			attempts[1].Error != "timeout" || attempts[1].N != 2 || attempts[0].N != 1 {
			t.Fatalf("delivery = %+v, attempts %+v, %v", d, attempts, err)
		}
		if d.LastError != "timeout" || d.LastStatus != 0 || !d.Updated.Equal(due) {
			t.Fatalf("delivery's last attempt = %+v", d)
		}
		if work, next, _ := s.DueDeliveries(ctx, "pos", T0.Add(time.Hour), 10, Never); len(work) != 0 || !next.IsZero() {
			t.Fatalf("dead delivery is due: %+v, next %v", work, next)
		}
		if n, _ := s.CountDead(ctx); n != 1 {
			t.Fatalf("CountDead = %d", n)
		}
		if n, _ := s.CountPending(ctx); n != 1 {
			t.Fatalf("CountPending = %d, want 1 (erp)", n)
		}
	})
	t.Run("Replay", func(t *testing.T) {
		now := T0.Add(2 * time.Hour)
		if n, err := s.ReplayDead(ctx, now); err != nil || n != 1 {
			t.Fatalf("ReplayDead = %d, %v", n, err)
		}
		d, attempts, _ := s.Delivery(ctx, ds[0].ID)
		if d.State != app.Pending || d.Tries != 0 || d.Attempts != 2 || len(attempts) != 2 || !d.Due.Equal(now) {
			t.Fatalf("after replay %+v", d)
		}
		if n, _ := s.CountDead(ctx); n != 0 {
			t.Fatalf("CountDead after replay = %d", n)
		}
		if work, _, _ := s.DueDeliveries(ctx, "pos", now, 10, Never); len(work) != 1 {
			t.Fatal("replayed delivery not due")
		}
		if err := s.Replay(ctx, ds[0].ID, now); err != nil {
			t.Fatalf("Replay of a pending delivery: %v (it is left as is)", err)
		}
		if err := s.Replay(ctx, 12345678, now); !errors.Is(err, app.ErrNotFound) {
			t.Fatalf("Replay of an unknown delivery: %v, want ErrNotFound", err)
		}
		if _, _, err := s.Delivery(ctx, 12345678); !errors.Is(err, app.ErrNotFound) {
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
		mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
		want = append([]string{e.ID}, want...)
	}
	work, next, err := s.DueDeliveries(ctx, "pos", T0.Add(time.Minute), 3, Never)
	if err != nil || len(work) != 3 || !next.Equal(T0.Add(3*time.Second)) {
		t.Fatalf("DueDeliveries = %d items, next %v, %v; want 3, next %v", len(work), next, err, T0.Add(3*time.Second))
	}
	for i, w := range work {
		if w.Event.ID != want[i] {
			t.Fatalf("item %d is %s, want %s (oldest due first)", i, w.Event.ID, want[i])
		}
	}
	if work, _, _ := s.DueDeliveries(ctx, "erp", T0.Add(time.Minute), 3, Never); len(work) != 0 {
		t.Fatalf("another destination's deliveries returned: %+v", work)
	}
	if n, _ := s.Backlog(ctx, "pos", 4); n != 4 {
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
	errs := s.RecordAttempts(ctx, recs)
	if len(errs) != 3 || errs[0] != nil || !errors.Is(errs[1], app.ErrNotFound) || errs[2] != nil {
		t.Fatalf("errs = %v; want nil, not found, nil", errs)
	}
	if recs[0].Attempt.N != 1 || recs[2].Attempt.N != 1 {
		t.Fatalf("attempt numbers %d, %d; want 1, 1", recs[0].Attempt.N, recs[2].Attempt.N)
	}
	if d, attempts, err := s.Delivery(ctx, ds[0].ID); err != nil || d.State != app.Delivered || len(attempts) != 1 || attempts[0].Status != 200 {
		t.Fatalf("pos: %+v, %+v, %v", d, attempts, err)
	}
	if d, _, err := s.Delivery(ctx, ds[1].ID); err != nil || d.State != app.Pending || !d.Due.Equal(retry) || d.LastStatus != 503 || d.LastError != "HTTP 503" {
		t.Fatalf("erp: %+v, %v", d, err)
	}
	if work, next, _ := s.DueDeliveries(ctx, "erp", T0, 10, Never); len(work) != 0 || !next.Equal(retry) {
		t.Fatalf("erp due now: %d items, next %v; want none until %v", len(work), next, retry)
	}
	if work, next, _ := s.DueDeliveries(ctx, "pos", T0.Add(time.Hour), 10, Never); len(work) != 0 || !next.IsZero() {
		t.Fatalf("delivered delivery is due: %+v, next %v", work, next)
	}
	if n, _ := s.CountPending(ctx); n != 1 {
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
	errs := s.RecordAttempts(ctx, []app.AttemptRecord{
		{ID: ds[0].ID, Attempt: &app.Attempt{Start: T0, Error: "bad status line \"\xff\x00\xc3\x28\"", Response: response}, State: app.Pending, Due: T0.Add(time.Minute)},
		{ID: ds[1].ID, Attempt: &app.Attempt{Start: T0, Status: 200}, State: app.Delivered},
	})
	if errs[0] != nil || errs[1] != nil {
		t.Fatalf("RecordAttempts = %v: an answer's bytes failed the record (and its neighbour's)", errs)
	}
	d, attempts, err := s.Delivery(ctx, ds[0].ID)
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
	mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
	d := deliveries(t, s, e.Seq, 1)[0]
	record(t, s, d.ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	if err := s.Replay(ctx, d.ID, T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	work, _, _ := s.DueDeliveries(ctx, "pos", T0.Add(time.Hour), 10, Never)
	if len(work) != 1 || work[0].Delivery.ID != d.ID || work[0].Delivery.Attempts != 1 || work[0].Delivery.Tries != 0 {
		t.Fatalf("replayed delivered delivery: %+v", work)
	}
}

// Dead letters page by delivery id, with the total on every page.
func testDeadLetters(t *testing.T, open Opener) {
	s := open(t)
	var dead []uint64
	for i := range 12 {
		e := NewEvent("shop", fmt.Sprint("d", i), T0)
		mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
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
		page, total, err := s.DeadLetters(ctx, after, 4)
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
	if n, err := s.CountDead(ctx); n != 9 || err != nil {
		t.Fatalf("CountDead = %d, %v", n, err)
	}
	if n, err := s.ReplayDead(ctx, T0.Add(time.Hour)); n != 9 || err != nil {
		t.Fatalf("ReplayDead = %d, %v", n, err)
	}
	if page, total, _ := s.DeadLetters(ctx, 0, 4); len(page) != 0 || total != 0 {
		t.Fatalf("after replay: %d dead letters, total %d", len(page), total)
	}
	if n, _ := s.CountPending(ctx); n != 12 {
		t.Fatalf("CountPending = %d, want 12", n)
	}
}
