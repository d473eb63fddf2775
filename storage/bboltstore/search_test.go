package bboltstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/storage/storetest"
)

// A search reads each body where it lies in the transaction and copies
// out only what matches (by decoding it): over events that do not match,
// it allocates no more than a bare walk of the same events with a bbolt
// cursor does (bbolt itself allocates once per page it reads, a boxed
// argument of its page check), whether it reads 100 events or 2,100.
func TestSearch_NoAllocationPerEvent(t *testing.T) {
	if raceEnabled {
		// The search's buffers and zstd's decoder state come from pools,
		// and under -race sync.Pool drops a share of each Put: 250
		// allocations for 100 events there, 21 without.
		t.Skip("allocation counts under -race say nothing about the shipped build: run without -race")
	}
	db, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	walk := func() {
		db.db().View(func(tx *bolt.Tx) error {
			c := tx.Bucket(bucketEvents).Cursor()
			for k, _ := c.Last(); k != nil; k, _ = c.Prev() {
			}
			return nil
		})
	}
	search := func() {
		res, err := db.SearchEvents(context.Background(), app.EventQuery{Q: "#9999999"})
		if err != nil || len(res.Rows) != 0 {
			t.Fatalf("SearchEvents = %+v, %v", res, err)
		}
	}
	start := 0
	for _, n := range []int{100, 2100} {
		for i := start; i < n; i++ {
			e := storetest.NewEvent("shop", fmt.Sprint("wh-", i), storetest.T0.Add(time.Duration(i)*time.Second))
			e.Body = storetest.ShopifyOrder(i)
			if _, err := db.Accept(context.Background(), e, e.ReceivedAt.Add(time.Hour), nil); err != nil {
				t.Fatal(err)
			}
		}
		start = n
		settle(t, db) // the walk reads the file as it is
		bare, searched := testing.AllocsPerRun(5, walk), testing.AllocsPerRun(5, search)
		t.Logf("%d events: a bare cursor walk allocates %.0f times, a search %.0f", n, bare, searched)
		if searched > bare+20 {
			t.Errorf("%d events: a search allocates %.0f times, a bare walk of them %.0f: the search allocates per event", n, searched, bare)
		}
	}
}
