package storage_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/storage"
)

// debounced returns a plan with one debounced route "r" to pos for key.
func debounced(key string, delay time.Duration) *app.Plan {
	return &app.Plan{Debounce: []*app.DebounceOp{{Route: "r", Key: key, Delay: delay, To: []string{"pos"}}}}
}

// A retention shorter than a debounce window: the sweep keeps the event
// its pending delivery will send, and the delivery goes out when the
// window ends.
func TestDB_DeleteEventsBefore_KeepsDebounced(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	first, last := newEvent("shop", "d-1", t0), newEvent("shop", "d-2", t0.Add(time.Second))
	for _, e := range []*app.Event{first, last} {
		if _, err := db.Accept(ctx, e, e.ReceivedAt.Add(time.Hour), debounced("c1", 10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// Rate-limited: deferred behind the window's only slot.
	limited := &app.Plan{Debounce: []*app.DebounceOp{{Route: "rl", Key: "c2", Delay: time.Second, Limit: 1, Window: time.Hour, To: []string{"pos"}}}}
	for i, id := range []string{"l-1", "l-2"} {
		e := newEvent("shop", id, t0.Add(time.Duration(i)*time.Second))
		if _, err := db.Accept(ctx, e, t0.Add(time.Hour), limited); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := db.FirePending(t0.Add(time.Second)); err != nil { // l-1 goes, l-2 waits an hour
		t.Fatal(err)
	}
	_, lseq, _, _ := db.LookupID("shop", "l-2")
	// Everything is older than the retention's cutoff.
	if _, err := db.DeleteEventsBefore(t0.Add(5*time.Second), 100); err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{last.Seq, lseq} {
		if e, err := db.Event(seq); err != nil || e == nil {
			t.Fatalf("event %d, which a pending delivery will send, was deleted (%v)", seq, err)
		}
	}
	fired, _, err := db.FirePending(t0.Add(11 * time.Second))
	if err != nil || fired["r"] != 1 {
		t.Fatalf("FirePending = %v, %v; want the debounced delivery fired", fired, err)
	}
	work, _, err := db.DueDeliveries("pos", t0.Add(11*time.Second), 10, never)
	if err != nil || len(work) != 2 || work[1].Event.ID != "d-2" {
		t.Fatalf("due after the window: %+v, %v; want l-1's and d-2's deliveries", work, err)
	}
}

// A pending delivery whose event is gone (a file written by an older
// build, a damaged one) is dead-lettered with the reason, not dropped.
func TestDB_FirePending_EventMissing(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEvent("shop", "gone-1", t0)
	if _, err := db.Accept(context.Background(), e, t0.Add(time.Hour), debounced("c1", 10*time.Second)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	withBolt(t, dir, func(tx *bolt.Tx) error { return tx.Bucket([]byte("events")).Delete(seqKey(e.Seq)) })
	db = mustOpenDir(t, dir)

	fired, _, err := db.FirePending(t0.Add(11 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if fired["r"] != 0 {
		t.Fatalf("fired = %v; nothing can be sent", fired)
	}
	dead, total, err := db.DeadLetters(0, 10)
	if err != nil || total != 1 || len(dead) != 1 {
		t.Fatalf("dead letters = %+v (%d), %v; want the pending delivery", dead, total, err)
	}
	if d := dead[0]; d.Destination != "pos" || d.EventSeq != e.Seq || !strings.Contains(d.LastError, "was gone") {
		t.Fatalf("dead letter = %+v; want pos, event %d, the reason", d, e.Seq)
	}
	if n, _ := db.PendingCount(); n != 0 {
		t.Fatalf("pending = %d after firing", n)
	}
}

// Merged ids go with their event: the sweep leaves no link behind.
func TestDB_DeleteEventsBefore_PrunesMerged(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var seqs []uint64
	for i := range 3 {
		e := newEvent("shop", string(rune('a'+i)), t0.Add(time.Duration(i)*time.Second))
		if _, err := db.Accept(ctx, e, t0.Add(time.Hour), debounced("c1", 10*time.Second)); err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, e.Seq)
	}
	if _, _, err := db.FirePending(t0.Add(20 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if merged, _ := db.MergedInto(seqs[2]); len(merged) != 2 {
		t.Fatalf("merged = %v, want two", merged)
	}
	work, _, _ := db.DueDeliveries("pos", t0.Add(20*time.Second), 10, never)
	if len(work) != 1 {
		t.Fatalf("due = %d", len(work))
	}
	if err := db.RecordAttempt(work[0].Delivery.ID, &app.Attempt{Start: t0, Status: 200}, app.Delivered, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.DeleteEventsBefore(t0.Add(time.Hour), 100); err != nil || n != 3 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 3", n, err)
	}
	db.Close()
	withBolt(t, dir, func(tx *bolt.Tx) error {
		if n := tx.Bucket([]byte("merged")).Stats().KeyN; n != 0 {
			t.Errorf("%d merged links left after their events were deleted", n)
		}
		return nil
	})
}

// withBolt runs fn in a write transaction on the closed data file in dir.
func withBolt(t *testing.T, dir string, fn func(*bolt.Tx) error) {
	t.Helper()
	bdb, err := bolt.Open(filepath.Join(dir, storage.FileName), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer bdb.Close()
	if err := bdb.Update(fn); err != nil {
		t.Fatal(err)
	}
}

func seqKey(seq uint64) []byte {
	return []byte{byte(seq >> 56), byte(seq >> 48), byte(seq >> 40), byte(seq >> 32), byte(seq >> 24), byte(seq >> 16), byte(seq >> 8), byte(seq)}
}

// A file an older build wrote has pending deliveries but no index of
// their events: Open rebuilds it, so retention keeps those events too.
func TestOpen_ReindexesPendingEvents(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := newEvent("shop", "old-build-1", t0)
	if _, err := db.Accept(context.Background(), e, t0.Add(time.Hour), debounced("c1", time.Hour)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	withBolt(t, dir, func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("pending_event")); err != nil {
			return err
		}
		_, err := tx.CreateBucket([]byte("pending_event"))
		return err
	})
	db = mustOpenDir(t, dir)
	if _, err := db.DeleteEventsBefore(t0.Add(time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Event(e.Seq); got == nil {
		t.Fatal("the event of a pending delivery was deleted after a reopen")
	}
}
