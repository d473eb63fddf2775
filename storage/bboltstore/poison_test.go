package bboltstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

// Records that cannot be decoded (a newer format, a bit flip) are set
// aside with their key and the reason; every other delivery to the same
// destination keeps flowing.
func TestDB_PoisonIsolated(t *testing.T) {
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var events []*app.Event
	for i := range 4 {
		e := newEvent("shop", fmt.Sprint("p-", i), t0.Add(time.Duration(i)*time.Millisecond))
		if _, err := db.Accept(ctx, e, t0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")}); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	ds, _ := db.EventDeliveries(context.Background(), events[2].Seq)
	flipped := ds[0].ID
	db.Close()
	withBolt(t, dir, func(tx *bolt.Tx) error {
		ev := tx.Bucket([]byte("events"))
		newer := append([]byte(nil), ev.Get(seqKey(events[1].Seq))...)
		newer[0] = 9 // a newer build's layout
		if err := ev.Put(seqKey(events[1].Seq), newer); err != nil {
			return err
		}
		dl := tx.Bucket([]byte("deliveries"))
		v := append([]byte(nil), dl.Get(seqKey(flipped))...)
		return dl.Put(seqKey(flipped), v[:len(v)-3]) // cut: its strings run past the end
	})
	db = mustOpenDir(t, dir)

	for round := range 2 {
		work, _, err := db.DueDeliveries(context.Background(), "pos", t0.Add(time.Minute), 10, never)
		if err != nil {
			t.Fatalf("round %d: DueDeliveries: %v; want the readable ones", round, err)
		}
		if len(work) != 2 || work[0].Event.ID != "p-0" || work[1].Event.ID != "p-3" {
			t.Fatalf("round %d: due %+v; want p-0 and p-3", round, work)
		}
	}
	poison, total, err := db.Poisoned(context.Background(), 10)
	if err != nil || total != 2 || len(poison) != 2 {
		t.Fatalf("Poisoned = %+v, %d, %v; want the event and the delivery", poison, total, err)
	}
	byKind := map[string]app.Poison{}
	for _, p := range poison {
		byKind[p.Kind] = p
	}
	if p := byKind["event"]; p.Key != fmt.Sprint(events[1].Seq) || !strings.Contains(p.Reason, "version 9") || p.Destination != "pos" || p.At.IsZero() {
		t.Errorf("poisoned event = %+v", p)
	}
	if p := byKind["delivery"]; p.Key != fmt.Sprint(flipped) || p.Reason == "" || p.Delivery != flipped {
		t.Errorf("poisoned delivery = %+v", p)
	}
	// The delivery of the unreadable event is dead, with the reason.
	dead, n, err := db.DeadLetters(context.Background(), 0, 10)
	if err != nil || n != 1 || dead[0].EventSeq != events[1].Seq || !strings.Contains(dead[0].LastError, "cannot be read") {
		t.Fatalf("dead letters = %+v (%d), %v", dead, n, err)
	}
	// The pages still list what can be read.
	rows, _, err := db.ListEvents(context.Background(), app.EventQuery{})
	if err != nil || len(rows) != 4 || rows[2].Status != "unreadable" {
		t.Fatalf("ListEvents = %+v, %v; want four rows, one unreadable", rows, err)
	}
	if _, err := db.ReplayDead(context.Background(), t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// A pending (debounced) delivery that cannot be decoded is set aside when
// it falls due, and the entity's next event opens a new one, instead of
// every event of that entity failing with 503.
func TestDB_PoisonPending(t *testing.T) {
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, key := range []string{"c1", "c2"} {
		if _, err := db.Accept(ctx, newEvent("shop", key+"-1", t0), t0.Add(time.Hour), debounced(key, time.Duration(i+1)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	withBolt(t, dir, func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("pending"))
		for _, key := range []string{"c1", "c2"} {
			if err := b.Put([]byte("r\x00"+key), []byte{7, 0, 1}); err != nil {
				return err
			}
		}
		return nil
	})
	db = mustOpenDir(t, dir)

	// c2's entity gets an event before its pending falls due.
	if _, err := db.Accept(ctx, newEvent("shop", "c2-2", t0.Add(time.Second)), t0.Add(time.Hour), debounced("c2", time.Second)); err != nil {
		t.Fatalf("an event for an entity whose pending delivery is unreadable: %v", err)
	}
	fired, _, err := db.FirePending(context.Background(), t0.Add(10*time.Second))
	if err != nil {
		t.Fatalf("FirePending: %v", err)
	}
	if fired["r"] != 1 {
		t.Fatalf("fired = %v; want c2's new pending delivery", fired)
	}
	poison, total, err := db.Poisoned(context.Background(), 10)
	if err != nil || total != 2 {
		t.Fatalf("Poisoned = %+v, %d, %v; want both pending deliveries", poison, total, err)
	}
	for _, p := range poison {
		if p.Kind != "pending delivery" || !strings.Contains(p.Key, `"c`) || !strings.Contains(p.Reason, "version 7") {
			t.Errorf("poisoned pending = %+v", p)
		}
	}
	if n, _ := db.PendingCount(context.Background()); n != 0 {
		t.Fatalf("pending = %d", n)
	}
}
