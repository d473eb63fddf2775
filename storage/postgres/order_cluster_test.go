package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// Two nodes on one database claim the deliveries of a few order groups
// at once, as fast as they can, and record each: a group never has two
// deliveries leased at once, and each goes out only after every earlier
// one of its group was recorded.
func TestOrder_TwoNodesClaimConcurrently(t *testing.T) {
	url := pgtest.URL(t)
	nodes := []*postgres.DB{mustOpenURL(t, url, postgres.Options{Lease: time.Hour}), mustOpenURL(t, url, postgres.Options{Lease: time.Hour})}
	const keys, updates = 4, 12
	group := map[uint64]string{} // delivery id → its key
	var order = map[string][]uint64{}
	for n := range updates {
		for k := range keys {
			key := fmt.Sprint("k", k)
			e := storetest.NewEvent("shop", fmt.Sprint(key, "-", n), t0)
			plan := &app.Plan{Direct: []app.Direct{{Dest: "pos", Route: "customers", OrderKey: key}}}
			if _, err := nodes[n%2].Accept(context.Background(), e, t0.Add(time.Hour), plan); err != nil {
				t.Fatal(err)
			}
			ds, err := nodes[0].EventDeliveries(context.Background(), e.Seq)
			if err != nil || len(ds) != 1 {
				t.Fatalf("deliveries of %s: %+v, %v", e.ID, ds, err)
			}
			group[ds[0].ID] = key
			order[key] = append(order[key], ds[0].ID)
		}
	}
	var mu sync.Mutex
	held := map[string]uint64{} // key → the delivery a node has leased
	done := map[string]int{}    // key → how many of its deliveries were recorded
	var total int
	var wg sync.WaitGroup
	for i, db := range nodes {
		wg.Go(func() {
			for {
				mu.Lock()
				finished := total == keys*updates
				mu.Unlock()
				if finished {
					return
				}
				work, _, err := db.DueDeliveries(context.Background(), "pos", t0, 3, storetest.Never)
				if err != nil {
					t.Error(err)
					return
				}
				// The database's own view, one snapshot: no key has two
				// deliveries leased (pending, a node named, not recorded).
				err = db.Query(`SELECT order_key FROM hookbox_deliveries WHERE state = 1 AND leased_by IS NOT NULL
					GROUP BY order_key HAVING count(*) > 1`, nil, func(key string) {
					t.Errorf("the database shows two deliveries of %s leased at once", key)
				})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, w := range work {
					id := w.Delivery.ID
					key := group[id]
					if other, ok := held[key]; ok {
						t.Errorf("node %d leased %d of %s while %d of it was leased", i, id, key, other)
					}
					if want := order[key][done[key]]; id != want {
						t.Errorf("node %d leased %d of %s; want %d, the next in accept order", i, id, key, want)
					}
					held[key] = id
				}
				mu.Unlock()
				for _, w := range work {
					id := w.Delivery.ID
					// Out of hand before the record is committed: from then
					// on the other node may take the next of the key.
					mu.Lock()
					delete(held, group[id])
					done[group[id]]++
					total++
					mu.Unlock()
					rec := app.AttemptRecord{ID: id, Attempt: &app.Attempt{Start: t0, Status: 200}, State: app.Delivered}
					if err := db.RecordAttempts(context.Background(), []app.AttemptRecord{rec})[0]; err != nil {
						t.Error(err)
						return
					}
				}
				if t.Failed() {
					return
				}
			}
		})
	}
	wg.Wait()
}
