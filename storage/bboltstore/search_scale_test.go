package bboltstore_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/bboltstore"
	"hookbox/storage/storetest"
)

// TestScale_Search measures the body search of issue 29 on N stored 2 KiB
// Shopify orders (HOOKBOX_SEARCH_SCALE=N; 1000000 for the acceptance
// figures), received 250 ms apart (1,000,000 span 2.9 days): for an order
// name present once (the newest order, one in the middle, the oldest) and
// one present nowhere, how long the first page takes, how far it looked,
// and how many pages "search further" takes to reach the order.
// HOOKBOX_SEARCH_DIR keeps the filled store there for another run (a
// directory with a store in it is searched as it is). Skipped unless
// HOOKBOX_SEARCH_SCALE is set; never part of CI's default run.
func TestScale_Search(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HOOKBOX_SEARCH_SCALE"))
	if n <= 0 {
		t.Skip("set HOOKBOX_SEARCH_SCALE=1000000 to run")
	}
	dir := os.Getenv("HOOKBOX_SEARCH_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	_, statErr := os.Stat(dir + "/" + bboltstore.FileName)
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	if statErr == nil {
		_, events, _ := db.Counts(ctx)
		t.Logf("searching the %d events already stored in %s", events, dir)
	} else {
		storetest.FillOrders(t, db, n, 250*time.Millisecond)
	}
	if fi, err := os.Stat(dir + "/" + bboltstore.FileName); err == nil {
		t.Logf("data file %d MB", fi.Size()>>20)
	}
	for _, tc := range []struct {
		name string
		q    string
	}{
		{"newest", storetest.OrderName(n)},
		{"middle", storetest.OrderName(n / 2)},
		{"oldest", storetest.OrderName(1)},
		{"absent", "#9999999"},
	} {
		q := app.EventQuery{Q: tc.q, Limit: 50}
		var found bool
		var total time.Duration
		pages, read := 0, 0
		for {
			start := time.Now()
			res, err := db.SearchEvents(ctx, q)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			total += took
			pages++
			read += res.Searched
			if res.Searched > app.DefaultSearchBudget.Events {
				t.Errorf("%s: a page read %d events, over the budget of %d", tc.name, res.Searched, app.DefaultSearchBudget.Events)
			}
			if pages == 1 {
				window := "everything"
				if !res.SearchedUntil.IsZero() {
					window = "the last " + storetest.T0.Add(time.Duration(n)*250*time.Millisecond).Sub(res.SearchedUntil).Round(time.Minute).String() +
						" (back to " + res.SearchedUntil.UTC().Format(time.RFC3339) + ")"
				}
				t.Logf("%s (q=%s): first page in %v: %d found, read %d events, searched %s", tc.name, tc.q, took.Round(time.Millisecond),
					len(res.Rows), res.Searched, window)
			}
			if len(res.Rows) > 0 {
				found = true
				if len(res.Rows) != 1 {
					t.Errorf("%s: %d events found, want 1", tc.name, len(res.Rows))
				}
			}
			if found || res.Next == 0 {
				break
			}
			q.Before = res.Next
		}
		t.Logf("%s: found %v after %d pages, %d events read, %v in all", tc.name, found, pages, read, total.Round(time.Millisecond))
		if found != (tc.name != "absent") {
			t.Errorf("%s: found %v", tc.name, found)
		}
	}
}
