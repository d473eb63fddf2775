package bboltstore_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

// TestScale_MillionIDs measures, with HOOKBOX_SCALE=N remembered ids
// (1000000 for the figures in BENCHMARKS.md): the file size per event,
// start-up time and Go heap with them, and the ingest latency while the
// sweep forgets all of them. Skipped unless HOOKBOX_SCALE is set: filling
// takes about a minute.
func TestScale_MillionIDs(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HOOKBOX_SCALE"))
	if n <= 0 {
		t.Skip("set HOOKBOX_SCALE=1000000 to run")
	}
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 512)
	for i := range body {
		body[i] = 'x'
	}
	expires := t0.Add(time.Hour)
	fillStart := time.Now()
	inParallel(t, n, func(i int) error {
		e := &app.Event{Source: "shop", ID: randomID(uint64(i)), Topic: "orders/create", ReceivedAt: t0, Body: body,
			Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Shopify-Topic", Value: "orders/create"}}}
		// Expiry follows arrival, as in serve (received + retention).
		_, err := db.Accept(context.Background(), e, expires.Add(time.Duration(i)*time.Microsecond), nil)
		return err
	})
	t.Logf("filled %d events (512-byte bodies) in %v", n, time.Since(fillStart).Round(time.Second))
	db.Close()
	fi, _ := os.Stat(dir + "/" + bboltstore.FileName)
	t.Logf("file %d MB: %.0f bytes per stored event (id, expiry entry, event record)", fi.Size()>>20, float64(fi.Size())/float64(n))

	runtime.GC()
	openStart := time.Now()
	db, err = bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	opened := time.Since(openStart)
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("start-up (open the file): %v; Go heap after open %.1f MB", opened.Round(time.Millisecond), float64(ms.HeapAlloc)/(1<<20))

	// The sweep forgets every id while 64 callers keep accepting new events.
	stop := make(chan struct{})
	type sample struct {
		at  time.Time
		lat time.Duration
	}
	var samples []sample
	var mu sync.Mutex
	var ingest sync.WaitGroup
	// The sweep starts once every caller's accepts are going: each says so
	// after its first one commits.
	var started sync.WaitGroup
	started.Add(64)
	for w := range 64 {
		ingest.Add(1)
		go func() {
			defer ingest.Done()
			var mine []sample
			for i := 0; ; i++ {
				select {
				case <-stop:
					mu.Lock()
					samples = append(samples, mine...)
					mu.Unlock()
					return
				default:
				}
				e := &app.Event{Source: "live", ID: randomID(uint64(w)<<40 | uint64(i) | 1<<62), ReceivedAt: t0.Add(2 * time.Hour), Body: body}
				start := time.Now()
				if _, err := db.Accept(context.Background(), e, time.Now().Add(48*time.Hour), nil); err != nil {
					t.Error(err)
					if i == 0 {
						started.Done()
					}
					return
				}
				mine = append(mine, sample{start, time.Since(start)})
				if i == 0 {
					started.Done()
				}
			}
		}()
	}
	started.Wait() // ingest alone first
	sweepStart := time.Now()
	var forgotten, chunks int
	for { // as app.Sweeper does
		k, err := db.ForgetExpiredIDs(context.Background(), t0.Add(2*time.Hour), app.DefaultSweepChunk)
		if err != nil {
			t.Fatal(err)
		}
		forgotten += k
		chunks++
		if k < app.DefaultSweepChunk {
			break
		}
		time.Sleep(app.DefaultChunkPause) // the sweeper's pause between chunks: real time the ingest is measured over
	}
	swept := time.Since(sweepStart)
	sweepEnd := time.Now()
	close(stop)
	ingest.Wait()
	var lats []time.Duration // only the accepts made while the sweep ran
	for _, s := range samples {
		if !s.at.Before(sweepStart) && s.at.Before(sweepEnd) {
			lats = append(lats, s.lat)
		}
	}
	if len(lats) == 0 {
		t.Fatal("no accept ran during the sweep")
	}
	slices.Sort(lats)
	p := func(q float64) time.Duration { return lats[int(q*float64(len(lats)-1))] }
	t.Logf("sweep forgot %d ids in %d chunks in %v; meanwhile ingest made %d accepts: p50 %v, p99 %v, max %v",
		forgotten, chunks, swept.Round(time.Millisecond), len(lats), p(0.5).Round(time.Microsecond), p(0.99).Round(time.Microsecond), lats[len(lats)-1].Round(time.Microsecond))
	if forgotten != n {
		t.Fatalf("forgot %d, want %d", forgotten, n)
	}
}

// randomID is a unique id for n whose order has nothing to do with n's, as
// with real senders' ids (UUIDs, evt_…): B+tree inserts land at random
// pages, not at the right edge. (splitmix64 is a bijection.)
func randomID(n uint64) string {
	n += 0x9e3779b97f4a7c15
	n = (n ^ n>>30) * 0xbf58476d1ce4e5b9
	n = (n ^ n>>27) * 0x94d049bb133111eb
	return fmt.Sprintf("evt_%016x", n^n>>31)
}
