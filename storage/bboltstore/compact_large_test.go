package bboltstore_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/storage/bboltstore"
)

// The pause of a compaction on a large file: HOOKBOX_COMPACT_EVENTS
// Shopify orders (1,000,000 make a file of about 1.3 GB), the sweep
// deletes the older 60%, then a compaction runs while four writers
// accept. It says the file's sizes, the rounds, how long writes were held
// (the pause) and how long it took (docs/BENCHMARKS.md). Run by hand:
// HOOKBOX_COMPACT_EVENTS=1000000 go test -count=1 -run TestCompact_Large -v -timeout 30m ./storage/bboltstore
func TestCompact_Large(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HOOKBOX_COMPACT_EVENTS"))
	if n == 0 {
		t.Skip("set HOOKBOX_COMPACT_EVENTS to measure")
	}
	orders := bboltstore.ShopifyOrders(t)
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	ctx := context.Background()
	start := time.Now()
	inParallel(t, n, func(i int) error {
		at := t0.Add(time.Duration(i) * time.Second)
		_, err := db.Accept(ctx, shopifyEvent(orders, i, at), at.Add(time.Hour), nil)
		return err
	})
	t.Logf("%d events in %v: file %d bytes", n, time.Since(start).Round(time.Second), fileBytes(t, dir))
	start = time.Now()
	for {
		k, err := db.DeleteEventsBefore(ctx, t0.Add(time.Duration(n*6/10)*time.Second), 5000)
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			break
		}
	}
	t.Logf("swept 60%% in %v", time.Since(start).Round(time.Second))
	var stop atomic.Bool
	var wg sync.WaitGroup
	var accepted atomic.Int64
	var worst atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				k := n + w*10_000_000 + i
				at := t0.Add(time.Duration(k) * time.Second)
				began := time.Now()
				if _, err := db.Accept(ctx, shopifyEvent(orders, k, at), at.Add(time.Hour), nil); err != nil {
					t.Error(err)
					return
				}
				if d := int64(time.Since(began)); d > worst.Load() {
					worst.Store(d)
				}
				accepted.Add(1)
			}
		})
	}
	c, err := db.Compact(ctx)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted under load: %d → %d bytes, %d rounds, writes held %v, took %v; %d events accepted meanwhile, the slowest answer %v",
		c.Before, c.After, c.Rounds, c.Pause, c.Took.Round(time.Millisecond), accepted.Load(), time.Duration(worst.Load()).Round(time.Millisecond))
}
