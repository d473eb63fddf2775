package bboltstore_test

import (
	"testing"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/storage/storetest"
)

// A file without the order index (an older build's) gets it on Open,
// built from the pending deliveries: the second of a group is held back
// behind the first as in a file that always had it.
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
	withBolt(t, dir, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("order")) })
	db = mustOpenDir(t, dir)
	work, _, err := db.DueDeliveries(t.Context(), "pos", storetest.T0, 10, storetest.Never)
	if err != nil || len(work) != 1 || work[0].Delivery.ID != ids[0] {
		t.Fatalf("DueDeliveries after the rebuild = %+v, %v; want only %d (the head of A)", work, err, ids[0])
	}
}
