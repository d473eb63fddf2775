package bboltstore_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"hookbox/storage/bboltstore"
)

// TestFill_ShopifyOrders writes HOOKBOX_FILL_EVENTS synthetic Shopify
// orders into the data directory HOOKBOX_FILL_DIR, each accepted as serve
// accepts one (a fresh id remembered 30 days, headers kept, packed with the
// file's dictionary once it has one; no route, so no delivery), 64 callers
// sharing commits: a data file for measuring hookbox's memory and start
// with many stored events (docs/BENCHMARKS.md, "Memory and start"). The
// events arrived over the last hour, so serve's sweep keeps them. Skipped
// unless both are set.
func TestFill_ShopifyOrders(t *testing.T) {
	dir := os.Getenv("HOOKBOX_FILL_DIR")
	n, _ := strconv.Atoi(os.Getenv("HOOKBOX_FILL_EVENTS"))
	if dir == "" || n <= 0 {
		t.Skip("set HOOKBOX_FILL_DIR and HOOKBOX_FILL_EVENTS to fill a data directory")
	}
	orders := bboltstore.ShopifyOrders(t)
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	first := time.Now().Add(-time.Hour)
	step := time.Hour / time.Duration(n)
	start := time.Now()
	inParallel(t, n, func(i int) error {
		at := first.Add(time.Duration(i) * step)
		_, err := db.Accept(context.Background(), shopifyEvent(orders, i, at), at.Add(30*24*time.Hour), nil)
		return err
	})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d events in %v; data directory %d bytes", n, time.Since(start).Round(time.Second), dirBytes(t, dir))
}
