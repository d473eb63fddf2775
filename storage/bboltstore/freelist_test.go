package bboltstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/storage/bboltstore"
)

// freelists are the ways bbolt can keep its free pages that hookbox
// compares: the list written with every commit, as an array (bbolt's
// default) or a map, and the map not written but rebuilt at open
// (NoFreelistSync).
var freelists = []struct {
	name   string
	noSync bool
	typ    bolt.FreelistType
}{
	{"array+sync", false, bolt.FreelistArrayType},
	{"map+sync", false, bolt.FreelistMapType},
	{"map+nosync", true, bolt.FreelistMapType},
}

// useFreelist sets the store's freelist options for the rest of tb.
func useFreelist(tb testing.TB, noSync bool, typ bolt.FreelistType) {
	wasSync, wasType := bboltstore.SetFreelist(noSync, typ)
	tb.Cleanup(func() { bboltstore.SetFreelist(wasSync, wasType) })
}

// sweptStore opens a store in dir holding n Shopify orders of which the
// sweep has deleted the older nine tenths: the file's free pages many and
// scattered, as after retention's daily turnover.
func sweptStore(tb testing.TB, dir string, n int) *bboltstore.DB {
	tb.Helper()
	orders := bboltstore.ShopifyOrders(tb)
	db := mustOpenDir(tb, dir)
	ctx := context.Background()
	inParallel(tb, n, func(i int) error {
		at := t0.Add(time.Duration(i) * time.Second)
		_, err := db.Accept(ctx, shopifyEvent(orders, i, at), at.Add(time.Hour), nil)
		return err
	})
	cut := t0.Add(time.Duration(n-n/10) * time.Second)
	for {
		k, err := db.DeleteEventsBefore(ctx, cut, 500)
		if err != nil {
			tb.Fatal(err)
		}
		if k == 0 {
			break
		}
	}
	for {
		k, err := db.ForgetExpiredIDs(ctx, cut.Add(time.Hour), 500)
		if err != nil {
			tb.Fatal(err)
		}
		if k == 0 {
			break
		}
	}
	return db
}

// BenchmarkAcceptFreelist measures durable accepts of Shopify orders (64
// callers, no route) into a file whose sweep has just freed nine tenths of
// 20,000 events, with each freelist setting: with the list written every
// commit, each commit writes the list's pages too (a page per 500 free
// pages), and the array type searches it for every allocation.
func BenchmarkAcceptFreelist(b *testing.B) {
	orders := bboltstore.ShopifyOrders(b)
	for _, fl := range freelists {
		b.Run(fl.name, func(b *testing.B) {
			useFreelist(b, fl.noSync, fl.typ)
			db := sweptStore(b, b.TempDir(), 20000)
			free := db.PageStats().Free
			c0, _, p0 := db.CommitCounts()
			b.ReportAllocs()
			b.SetParallelism(64 / 2)
			next := make(chan int, 1)
			next <- 1 << 20
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				i := <-next
				next <- i + 1<<20
				for pb.Next() {
					i++
					at := time.Now()
					if _, err := db.Accept(context.Background(), shopifyEvent(orders, i, at), at.Add(time.Hour), nil); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			c1, _, p1 := db.CommitCounts()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "accepts/s")
			b.ReportMetric(float64(p1-p0)/float64(b.N), "pages/event")
			b.ReportMetric(float64(p1-p0)/float64(max(c1-c0, 1)), "pages/commit")
			b.ReportMetric(float64(free), "free-pages-at-start")
		})
	}
}

// A data file opens whichever freelist setting wrote it: bbolt rebuilds a
// list that was not written, and a build that writes it writes it at its
// first open. Events, ids and the free pages survive each switch, and the
// free pages are used again (the file does not grow for new events that
// fit in them).
func TestFreelist_FileOpensEitherWay(t *testing.T) {
	if testing.Short() {
		t.Skip("fills 3,000 events")
	}
	dir := t.TempDir()
	orders := bboltstore.ShopifyOrders(t)
	ctx := context.Background()
	path := filepath.Join(dir, bboltstore.FileName)
	size := func() int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	const n = 3000
	// Written by today's build (array, synced), swept, reopened each way.
	useFreelist(t, false, bolt.FreelistArrayType)
	db := sweptStore(t, dir, n)
	_, want, err := db.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	free := db.PageStats().Free
	db.Close()
	next := n
	for _, fl := range []struct {
		noSync bool
		typ    bolt.FreelistType
	}{{true, bolt.FreelistMapType}, {false, bolt.FreelistArrayType}, {true, bolt.FreelistMapType}, {false, bolt.FreelistMapType}} {
		bboltstore.SetFreelist(fl.noSync, fl.typ)
		before := size()
		db, err := bboltstore.Open(dir)
		if err != nil {
			t.Fatalf("noSync %v, %s: %v", fl.noSync, fl.typ, err)
		}
		if got := db.PageStats().Free; got < free/2 {
			t.Errorf("noSync %v, %s: %d free pages after open; want about %d", fl.noSync, fl.typ, got, free)
		}
		if _, got, err := db.Counts(ctx); err != nil || got != want {
			t.Fatalf("noSync %v, %s: %d events, %v; want %d", fl.noSync, fl.typ, got, err, want)
		}
		last := shopifyEvent(orders, next-1, t0)
		if _, _, ok, err := db.LookupID(ctx, "shop", last.ID); !ok || err != nil {
			t.Fatalf("noSync %v, %s: the newest id is forgotten (%v)", fl.noSync, fl.typ, err)
		}
		// A few events more fit in the free pages.
		for i := range 50 {
			at := time.Now()
			if _, err := db.Accept(ctx, shopifyEvent(orders, next+i, at), at.Add(time.Hour), nil); err != nil {
				t.Fatal(err)
			}
		}
		next += 50
		want += 50
		free = db.PageStats().Free
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("noSync %v, %s: opened, %d events, %d pages free after 50 more", fl.noSync, fl.typ, want, free)
		if after := size(); after > before {
			t.Errorf("noSync %v, %s: the file grew from %d to %d bytes with %d pages free", fl.noSync, fl.typ, before, after, free)
		}
	}
}
