package bboltstore

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/storage/storetest"
)

// packedOrdersDB is a store holding n synthetic Shopify orders (a fresh
// order id each, the headers Shopify sends) accepted 1 s apart, all but
// the first dictAfter-odd ones packed with the dictionary the store
// trained from them, as a store in service holds them. It returns the
// store and the accepted events, oldest first.
func packedOrdersDB(tb testing.TB, n int) (*DB, []*app.Event) {
	tb.Helper()
	orders := shopifyOrders(tb)
	events := make([]*app.Event, n)
	for i := range events {
		body := orders[i%len(orders)]
		if j := bytes.Index(body, []byte(`"id":`)); j >= 0 {
			k := j + 5
			for k < len(body) && body[k] >= '0' && body[k] <= '9' {
				k++
			}
			body = bytes.ReplaceAll(body, body[j+5:k], []byte(strconv.Itoa(5600000000000+i)))
		}
		id := fmt.Sprintf("%08x-2f1c-4b8e-9d3a-%012x", i, i*31)
		events[i] = &app.Event{Source: "shop", ID: id, Topic: "orders/create", ReceivedAt: storetest.T0.Add(time.Duration(i) * time.Second), Body: body,
			Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Shopify-Topic", Value: "orders/create"},
				{Name: "X-Shopify-Hmac-Sha256", Value: "XWmrwMey6OsLMeiZKwP4FppHH3cmAiiJJAweH5Jo4bM="}, {Name: "X-Shopify-Webhook-Id", Value: id}}}
	}
	db, err := Open(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	// In time order: the trained dictionary comes after the first
	// dictAfter, and the later ones are packed with it.
	accept := func(from, to int) {
		storetest.InParallel(tb, to-from, func(i int) error {
			e := events[from+i-1]
			_, err := db.Accept(context.Background(), e, e.ReceivedAt.Add(time.Hour), nil)
			return err
		})
	}
	first := min(n, dictAfter+dictSamples)
	accept(0, first)
	settle(tb, db) // the last accepts applied: they start the training
	db.trainers.Wait()
	if n >= first && db.packer.Load() == nil {
		tb.Fatal("no dictionary trained")
	}
	accept(first, n)
	slices.SortFunc(events, func(a, b *app.Event) int { return int(a.Seq) - int(b.Seq) })
	return db, events
}

// BenchmarkSearch_Packed measures a body search over packed Shopify
// orders, all read (text found nowhere): µs/event is the time per event
// read, what bounds how far a page reaches in its 1 s budget; cpu-µs/event
// the CPU time the process spent per event, on every core (on a loaded
// machine the steadier of the two).
func BenchmarkSearch_Packed(b *testing.B) {
	const n, read = 5000, 3500 // the newest 3,500: packed with the dictionary
	db, _ := packedOrdersDB(b, n)
	db.SetSearchBudget(app.SearchBudget{Events: read, Time: time.Hour})
	ctx := context.Background()
	var cpu time.Duration
	for b.Loop() {
		before := apptest.CPUTime()
		res, err := db.SearchEvents(ctx, app.EventQuery{Q: "#9999999"})
		if err != nil || res.Searched != read || len(res.Rows) != 0 {
			b.Fatalf("%d read, %d found, %v", res.Searched, len(res.Rows), err)
		}
		cpu += apptest.CPUTime() - before
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N*read), "cpu-µs/event")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*read), "µs/event")
}

// A search finds the same events, pages and stopping points over packed
// events as over the same events stored plain: the packed ones searched
// first, then every record of the same file rewritten plain and the same
// queries asked again.
func TestSearch_PackedSameAsPlain(t *testing.T) {
	const n = 1600
	db, events := packedOrdersDB(t, n)
	ctx := context.Background()
	newest := events[n-1]
	queries := []app.EventQuery{
		{Q: "#9999999"},                       // nowhere
		{Q: events[n-7].ID},                   // a webhook id: in headers, no body
		{Q: strconv.Itoa(5600000000000 + 42)}, // one order's id, in its body
		{Q: "ORDERS/CREATE", Limit: 500},      // everywhere, either case: pages of 500
		{Q: `"currency":"`, Limit: 37},        // everywhere, a page ending inside a batch
		{Q: `"currency":"`, Limit: 37, Before: events[n-100].Seq},
		{Q: `"currency":"`, Limit: 37, Until: newest.ReceivedAt.Add(-10 * time.Minute), Since: newest.ReceivedAt.Add(-20 * time.Minute)},
		{Q: `"currency":"`, ID: events[n-3].ID},
		{Q: "Tea"}, // some orders
	}
	budgets := []app.SearchBudget{{Events: 333, Time: time.Hour}, {Events: 200000, Time: time.Hour}}
	// Every page of each query, "search further" followed to the end.
	run := func() []string {
		var out []string
		for _, budget := range budgets {
			db.SetSearchBudget(budget)
			for _, q := range queries {
				for page := 0; ; page++ {
					res, err := db.SearchEvents(ctx, q)
					if err != nil {
						t.Fatalf("%+v: %v", q, err)
					}
					var ids []string
					for _, r := range res.Rows {
						ids = append(ids, fmt.Sprint(r.Seq, r.ID, r.Size))
					}
					out = append(out, fmt.Sprintf("budget %d q %q page %d: searched %d next %d until %v stopped %v rows %v",
						budget.Events, q.Q, page, res.Searched, res.Next, res.SearchedUntil.Unix(), res.Stopped, ids))
					if res.Next == 0 || q.ID != "" {
						break
					}
					q.Before = res.Next
				}
			}
		}
		return out
	}
	packed := run()
	rewritten := 0
	err := db.db().Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		type kv struct{ k, v []byte }
		var plain []kv
		err := b.ForEach(func(k, v []byte) error {
			if v[0] != eventPacked {
				return nil
			}
			p, err := unpack(v, nil)
			plain = append(plain, kv{bytes.Clone(k), p})
			return err
		})
		for _, r := range plain {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
		rewritten = len(plain)
		return err
	})
	if err != nil || rewritten != n {
		t.Fatalf("rewrote %d of %d events plain: %v", rewritten, n, err)
	}
	plain := run()
	found := 0
	for i := range packed {
		if packed[i] != plain[i] {
			t.Errorf("packed: %s\n plain: %s", packed[i], plain[i])
		}
		if !bytes.Contains([]byte(packed[i]), []byte("rows []")) {
			found++
		}
	}
	if found < len(queries) {
		t.Errorf("only %d pages found anything: the queries test too little", found)
	}
}
