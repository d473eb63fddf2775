package bboltstore_test

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/storage/storetest"
)

// A file without the order indexes (an older build's) gets them on Open,
// built from the deliveries: the second of a group is held back behind
// the first, and names it as the one before, as in a file that always
// had them.
func TestOpen_RebuildsOrderIndex(t *testing.T) {
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	var ids []uint64
	for _, id := range []string{"a1", "a2"} {
		e := newEvent("shop", id, storetest.T0)
		if _, err := db.Accept(t.Context(), e, storetest.T0.Add(1e12), &app.Plan{Direct: []app.Direct{{Dest: "pos", Route: "r", OrderKey: "A"}}}); err != nil {
			t.Fatal(err)
		}
		ds, err := db.EventDeliveries(t.Context(), e.Seq)
		if err != nil || len(ds) != 1 {
			t.Fatalf("deliveries of %s: %+v, %v", id, ds, err)
		}
		ids = append(ids, ds[0].ID)
	}
	db.Close()
	withBolt(t, dir, func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket([]byte("order")); err != nil {
			return err
		}
		return tx.DeleteBucket([]byte("order_all"))
	})
	db = mustOpenDir(t, dir)
	work, _, err := db.DueDeliveries(t.Context(), "pos", storetest.T0, 10, storetest.Never)
	if err != nil || len(work) != 1 || work[0].Delivery.ID != ids[0] {
		t.Fatalf("DueDeliveries after the rebuild = %+v, %v; want only %d (the head of A)", work, err, ids[0])
	}
	second, _, err := db.Delivery(t.Context(), ids[1])
	if err != nil {
		t.Fatal(err)
	}
	if prev, err := db.PreviousInGroup(t.Context(), second); err != nil || prev == nil || prev.ID != ids[0] {
		t.Fatalf("PreviousInGroup after the rebuild = %+v, %v; want %d", prev, err, ids[0])
	}
}
