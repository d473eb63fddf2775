package bboltstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

// debounced returns a plan with one debounced route "r" to pos for key.
func debounced(key string, delay time.Duration) *app.Plan {
	return &app.Plan{Debounce: []*app.DebounceOp{{Route: "r", Key: key, Delay: delay, To: []string{"pos"}}}}
}

// Merged ids go with their event: the sweep leaves no link behind, either
// way, in the file (storetest's DeleteEventsBeforeDeletesMergedLinks sees
// what the API shows).
func TestDB_DeleteEventsBefore_PrunesMerged(t *testing.T) {
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
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
	if _, _, err := db.FirePending(context.Background(), t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if merged, _ := db.MergedInto(context.Background(), seqs[2]); len(merged) != 2 {
		t.Fatalf("merged = %v, want two", merged)
	}
	work, _, _ := db.DueDeliveries(context.Background(), "pos", t0.Add(20*time.Second), 10, never)
	if len(work) != 1 {
		t.Fatalf("due = %d", len(work))
	}
	if err := db.RecordAttempt(context.Background(), work[0].Delivery.ID, &app.Attempt{Start: t0, Status: 200}, app.Delivered, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if n, err := db.DeleteEventsBefore(context.Background(), t0.Add(time.Hour), 100); err != nil || n != 3 {
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
	bdb, err := bolt.Open(filepath.Join(dir, bboltstore.FileName), 0o600, &bolt.Options{Timeout: time.Second})
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
	db, err := bboltstore.Open(dir)
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
	if _, err := db.DeleteEventsBefore(context.Background(), t0.Add(time.Minute), 100); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.Event(context.Background(), e.Seq); got == nil {
		t.Fatal("the event of a pending delivery was deleted after a reopen")
	}
}
