package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// Damage breaks a store's records behind its back, as a damaged disk, a
// bug or an older build could. Each function returns the store to go on
// with (the bbolt store is closed, changed and opened again).
type Damage struct {
	// DropEvent deletes event seq's record, and nothing else.
	DropEvent func(t *testing.T, s storage.Store, seq uint64) storage.Store
	// SpoilEvent makes event seq's record impossible to decode (on
	// PostgreSQL, whose columns are typed, its headers' encoding).
	SpoilEvent func(t *testing.T, s storage.Store, seq uint64) storage.Store
}

// runFaults runs the tests of what a store does when work waits long or
// records are missing or cannot be read: nothing is lost silently.
func runFaults(t *testing.T, open Opener, damage Damage) {
	t.Run("WaitingDeliveries", func(t *testing.T) { testWaitingDeliveries(t, open) })
	t.Run("DeleteEventsBeforeKeepsDebounced", func(t *testing.T) { testDeleteKeepsDebounced(t, open) })
	t.Run("DeleteEventsBeforeDeletesMergedLinks", func(t *testing.T) { testDeleteMergedLinks(t, open) })
	t.Run("FirePendingEventMissing", func(t *testing.T) { testFireEventMissing(t, open, damage) })
	t.Run("DueEventMissing", func(t *testing.T) { testDueEventMissing(t, open, damage) })
	t.Run("PoisonEvent", func(t *testing.T) { testPoisonEvent(t, open, damage) })
}

// debounced returns a plan with one debounced route "r" to pos for key.
func debounced(key string, delay time.Duration) *app.Plan {
	return &app.Plan{Debounce: []*app.DebounceOp{{Route: "r", Key: key, Delay: delay, To: []string{"pos"}}}}
}

// WaitingDeliveries reads a destination's pending deliveries in due order,
// due or not, from a position on; an Early attempt keeps the delivery's
// step in its schedule.
func testWaitingDeliveries(t *testing.T, open Opener) {
	s := open(t)
	var ids []uint64
	for i := range 3 {
		_, ds := acceptRouted(t, s, string(rune('a'+i)), "pos")
		// Retries due in 3h, 2h, 1h: due order is the reverse of ids.
		record(t, s, ds[0].ID, &app.Attempt{Start: T0, Status: 503}, app.Pending, T0.Add(time.Duration(3-i)*time.Hour))
		ids = append(ids, ds[0].ID)
	}
	work, err := s.WaitingDeliveries(ctx, "pos", time.Time{}, 0, 2, Never)
	if err != nil || len(work) != 2 || work[0].Delivery.ID != ids[2] || work[1].Delivery.ID != ids[1] || work[0].Event.ID != "c" ||
		!work[0].Delivery.Due.Equal(T0.Add(time.Hour)) || string(work[0].Event.Body) != string(NewEvent("", "", T0).Body) {
		t.Fatalf("first two waiting = %+v, %v; want c's and b's", work, err)
	}
	last := work[1].Delivery
	work, err = s.WaitingDeliveries(ctx, "pos", last.Due, last.ID, 2, Never)
	if err != nil || len(work) != 1 || work[0].Delivery.ID != ids[0] {
		t.Fatalf("after the second = %+v, %v; want a's", work, err)
	}
	if work, err := s.WaitingDeliveries(ctx, "erp", time.Time{}, 0, 2, Never); len(work) != 0 || err != nil {
		t.Fatalf("another destination's: %+v, %v", work, err)
	}
	if work, err := s.WaitingDeliveries(ctx, "pos", T0.Add(3*time.Hour), ids[0], 2, Never); len(work) != 0 || err != nil {
		t.Fatalf("after the last: %+v, %v", work, err)
	}
	early := app.AttemptRecord{ID: ids[0], Attempt: &app.Attempt{Start: T0.Add(time.Minute), Status: 503}, State: app.Pending, Due: T0.Add(3 * time.Hour), Early: true}
	if errs := s.RecordAttempts(ctx, []app.AttemptRecord{early}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	if d, _, _ := s.Delivery(ctx, ids[0]); d.Tries != 1 || d.Attempts != 2 || !d.Due.Equal(T0.Add(3*time.Hour)) {
		t.Fatalf("after an early attempt: %+v; want 2 attempts, still at step 1", d)
	}
	// Its record ended its lease: it is due at its due time (b and c are
	// still in flight).
	inFlight := func(id uint64) bool { return id != ids[0] }
	if work, _, err := s.DueDeliveries(ctx, "pos", T0.Add(3*time.Hour-time.Second), 10, inFlight); err != nil || len(work) != 0 {
		t.Fatalf("due before 3h: %+v, %v; want none", work, err)
	}
	if work, _, err := s.DueDeliveries(ctx, "pos", T0.Add(3*time.Hour), 10, inFlight); err != nil || len(work) != 1 || work[0].Delivery.ID != ids[0] {
		t.Fatalf("due at 3h: %+v, %v; want a's", work, err)
	}
}

// A retention shorter than a debounce window, or than a rate limit's
// wait: the sweep keeps the event a pending delivery will send, and the
// delivery goes out when the window ends.
func testDeleteKeepsDebounced(t *testing.T, open Opener) {
	s := open(t)
	first, last := NewEvent("shop", "d-1", T0), NewEvent("shop", "d-2", T0.Add(time.Second))
	for _, e := range []*app.Event{first, last} {
		mustAccept(t, s, e, debounced("c1", 10*time.Second))
	}
	// Rate-limited: l-1 takes the window's only slot, l-2 is deferred
	// behind it for an hour.
	limited := func() *app.Plan {
		return &app.Plan{Debounce: []*app.DebounceOp{{Route: "rl", Key: "c2", Delay: time.Second, Limit: 1, Window: time.Hour, To: []string{"pos"}}}}
	}
	mustAccept(t, s, NewEvent("shop", "l-1", T0), limited())
	if fired, _, err := s.FirePending(ctx, T0.Add(time.Second)); err != nil || fired["rl"] != 1 {
		t.Fatalf("FirePending = %v, %v; want l-1's delivery", fired, err)
	}
	l2 := NewEvent("shop", "l-2", T0.Add(time.Second))
	plan := limited()
	mustAccept(t, s, l2, plan)
	if plan.Debounce[0].Result != app.Deferred {
		t.Fatalf("l-2: %d, want Deferred", plan.Debounce[0].Result)
	}
	lseq := l2.Seq
	// Everything is older than the retention's cutoff; only d-1, merged
	// into d-2's delivery, has nothing left to send.
	if n, err := s.DeleteEventsBefore(ctx, T0.Add(5*time.Second), 100); err != nil || n != 1 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 1 (d-1)", n, err)
	}
	for _, seq := range []uint64{last.Seq, lseq} {
		if e, err := s.Event(ctx, seq); err != nil || e == nil {
			t.Fatalf("event %d, which a pending delivery will send, was deleted (%v)", seq, err)
		}
	}
	fired, _, err := s.FirePending(ctx, T0.Add(11*time.Second))
	if err != nil || fired["r"] != 1 {
		t.Fatalf("FirePending = %v, %v; want the debounced delivery fired", fired, err)
	}
	work, _, err := s.DueDeliveries(ctx, "pos", T0.Add(11*time.Second), 10, Never)
	if err != nil || len(work) != 2 || work[1].Event.ID != "d-2" {
		t.Fatalf("due after the window: %+v, %v; want l-1's and d-2's deliveries", work, err)
	}
	// The rate-limited one goes out when its window frees a slot.
	if fired, _, err := s.FirePending(ctx, T0.Add(time.Hour)); err != nil || fired["rl"] != 1 {
		t.Fatalf("FirePending at 1h = %v, %v; want l-2's delivery", fired, err)
	}
	sent := work
	inFlight := func(id uint64) bool { return id == sent[0].Delivery.ID || id == sent[1].Delivery.ID }
	if work, _, err := s.DueDeliveries(ctx, "pos", T0.Add(time.Hour), 10, inFlight); err != nil || len(work) != 1 || work[0].Event.ID != "l-2" {
		t.Fatalf("due at 1h: %+v, %v; want l-2's delivery", work, err)
	}
}

// Merged links go with their event: an event merged into another's
// delivery leaves MergedInto when it is swept, and so do the links of
// the event that was sent.
func testDeleteMergedLinks(t *testing.T, open Opener) {
	s := open(t)
	var seqs []uint64
	for i := range 3 {
		e := NewEvent("shop", string(rune('a'+i)), T0.Add(time.Duration(i)*time.Second))
		mustAccept(t, s, e, debounced("c1", 10*time.Second))
		seqs = append(seqs, e.Seq)
	}
	if fired, _, err := s.FirePending(ctx, T0.Add(20*time.Second)); err != nil || fired["r"] != 1 {
		t.Fatalf("FirePending = %v, %v", fired, err)
	}
	if merged, _ := s.MergedInto(ctx, seqs[2]); !slices.Equal(merged, seqs[:2]) {
		t.Fatalf("merged = %v, want %v", merged, seqs[:2])
	}
	// a and b have nothing to send; c's delivery is pending.
	if n, err := s.DeleteEventsBefore(ctx, T0.Add(time.Hour), 100); err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 2 (the merged ones)", n, err)
	}
	if merged, err := s.MergedInto(ctx, seqs[2]); len(merged) != 0 || err != nil {
		t.Fatalf("MergedInto after the merged events were swept = %v, %v; want none", merged, err)
	}
	d := deliveries(t, s, seqs[2], 1)[0]
	record(t, s, d.ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	if n, err := s.DeleteEventsBefore(ctx, T0.Add(time.Hour), 100); err != nil || n != 1 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 1", n, err)
	}
	if ids, events := counts(t, s); events != 0 || ids != 3 {
		t.Fatalf("%d ids, %d events left; want 3, 0", ids, events)
	}
}

// A pending delivery whose event is gone (a damaged store, one an older
// build swept) is dead-lettered with the reason, not dropped.
func testFireEventMissing(t *testing.T, open Opener, damage Damage) {
	s := open(t)
	e := NewEvent("shop", "gone-1", T0)
	mustAccept(t, s, e, debounced("c1", 10*time.Second))
	kept := NewEvent("shop", "kept-1", T0)
	mustAccept(t, s, kept, debounced("c2", 10*time.Second))
	s = damage.DropEvent(t, s, e.Seq)

	fired, _, err := s.FirePending(ctx, T0.Add(11*time.Second))
	if err != nil || fired["r"] != 1 {
		t.Fatalf("FirePending = %v, %v; want c2's delivery alone", fired, err)
	}
	dead, total, err := s.DeadLetters(ctx, 0, 10)
	if err != nil || total != 1 || len(dead) != 1 {
		t.Fatalf("dead letters = %+v (%d), %v; want the pending delivery", dead, total, err)
	}
	if d := dead[0]; d.Destination != "pos" || d.EventSeq != e.Seq || !strings.Contains(d.LastError, "was gone") || !strings.Contains(d.LastError, "c1") {
		t.Fatalf("dead letter = %+v; want pos, event %d, the reason with the key", d, e.Seq)
	}
	if n, _ := s.PendingCount(ctx); n != 0 {
		t.Fatalf("pending = %d after firing", n)
	}
	if work, _, err := s.DueDeliveries(ctx, "pos", T0.Add(11*time.Second), 10, Never); err != nil || len(work) != 1 || work[0].Event.ID != "kept-1" {
		t.Fatalf("due = %+v, %v; want kept-1's delivery", work, err)
	}
	// The key is free: the entity's next event opens a new pending delivery.
	o := &app.DebounceOp{Route: "r", Key: "c1", Delay: time.Second, To: []string{"pos"}}
	mustAccept(t, s, NewEvent("shop", "gone-2", T0.Add(time.Minute)), &app.Plan{Debounce: []*app.DebounceOp{o}})
	if o.Result != app.Opened {
		t.Fatalf("the entity's next event: %d, want Opened", o.Result)
	}
}

// A due delivery whose event is gone is dead-lettered with the reason;
// every other delivery of its destination keeps flowing.
func testDueEventMissing(t *testing.T, open Opener, damage Damage) {
	s := open(t)
	var events []*app.Event
	for i := range 3 {
		e, _ := acceptRouted(t, s, fmt.Sprint("m-", i), "pos")
		events = append(events, e)
	}
	s = damage.DropEvent(t, s, events[1].Seq)
	work, _, err := s.DueDeliveries(ctx, "pos", T0.Add(time.Minute), 10, Never)
	if err != nil || len(work) != 2 || work[0].Event.ID != "m-0" || work[1].Event.ID != "m-2" {
		t.Fatalf("DueDeliveries = %+v, %v; want m-0 and m-2", work, err)
	}
	dead, total, err := s.DeadLetters(ctx, 0, 10)
	if err != nil || total != 1 || dead[0].EventSeq != events[1].Seq || !strings.Contains(dead[0].LastError, "gone") {
		t.Fatalf("dead letters = %+v (%d), %v; want m-1's delivery with the reason", dead, total, err)
	}
	if _, n, err := s.Poisoned(ctx, 10); n != 0 || err != nil {
		t.Fatalf("Poisoned = %d, %v; nothing was undecodable", n, err)
	}
	inFlight := func(id uint64) bool { return id == work[0].Delivery.ID || id == work[1].Delivery.ID }
	if work, next, err := s.DueDeliveries(ctx, "pos", T0.Add(time.Hour), 10, inFlight); len(work) != 0 || err != nil {
		t.Fatalf("read again: %+v, next %v, %v; the dead one came back", work, next, err)
	}
}

// Events that cannot be decoded are set aside with their key and the
// reason, their deliveries dead-lettered with it, and every other
// delivery to the same destination keeps flowing, whether it is read
// when due or early.
func testPoisonEvent(t *testing.T, open Opener, damage Damage) {
	s := open(t)
	var events []*app.Event
	var ids []uint64
	for i := range 4 {
		e, ds := acceptRouted(t, s, fmt.Sprint("p-", i), "pos")
		events = append(events, e)
		ids = append(ids, ds[0].ID)
	}
	// p-3 waits for a retry in an hour.
	record(t, s, ids[3], &app.Attempt{Start: T0, Status: 503}, app.Pending, T0.Add(time.Hour))
	s = damage.SpoilEvent(t, s, events[1].Seq)
	s = damage.SpoilEvent(t, s, events[3].Seq)

	work, _, err := s.DueDeliveries(ctx, "pos", T0.Add(time.Minute), 10, Never)
	if err != nil || len(work) != 2 || work[0].Event.ID != "p-0" || work[1].Event.ID != "p-2" {
		t.Fatalf("DueDeliveries = %+v, %v; want p-0 and p-2", work, err)
	}
	poison, total, err := s.Poisoned(ctx, 10)
	if err != nil || total != 1 || len(poison) != 1 {
		t.Fatalf("Poisoned = %+v, %d, %v; want p-1's event", poison, total, err)
	}
	if p := poison[0]; p.Kind != "event" || p.Key != fmt.Sprint(events[1].Seq) || p.Reason == "" || p.Destination != "pos" ||
		p.Delivery != ids[1] || p.At.IsZero() {
		t.Errorf("poisoned event = %+v", p)
	}
	// Read early (a destination that answers again): p-3 is set aside too.
	inFlight := func(id uint64) bool { return id == ids[0] || id == ids[2] }
	if work, err := s.WaitingDeliveries(ctx, "pos", time.Time{}, 0, 10, inFlight); err != nil || len(work) != 0 {
		t.Fatalf("WaitingDeliveries = %+v, %v; want none (p-3 cannot be read)", work, err)
	}
	poison, total, err = s.Poisoned(ctx, 10)
	if err != nil || total != 2 || len(poison) != 2 || poison[0].Key != fmt.Sprint(events[3].Seq) || poison[1].Key != fmt.Sprint(events[1].Seq) {
		t.Fatalf("Poisoned = %+v, %d, %v; want p-3's then p-1's, newest first", poison, total, err)
	}
	if short, total, err := s.Poisoned(ctx, 1); len(short) != 1 || total != 2 || err != nil {
		t.Fatalf("Poisoned(1) = %d records, %d in all, %v", len(short), total, err)
	}
	dead, n, err := s.DeadLetters(ctx, 0, 10)
	if err != nil || n != 2 || dead[0].ID != ids[1] || dead[1].ID != ids[3] {
		t.Fatalf("dead letters = %+v (%d), %v; want p-1's and p-3's deliveries", dead, n, err)
	}
	for _, d := range dead {
		if !strings.Contains(d.LastError, "cannot be read") || d.State != app.Dead {
			t.Fatalf("dead letter %+v; want the reason", d)
		}
	}
	// The pages still list every event.
	rows, _, err := s.ListEvents(ctx, app.EventQuery{})
	if err != nil || len(rows) != 4 {
		t.Fatalf("ListEvents = %+v, %v; want four rows", rows, err)
	}
	if _, err := s.ReplayDead(ctx, T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}
