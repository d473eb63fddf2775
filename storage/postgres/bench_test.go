package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// BenchmarkAccept measures durable accepts with a route (one delivery
// each) at 64 concurrent callers with random ids and 2 KiB bodies: group
// commits by 1, 2 and 4 committers, and a transaction per accept on 64
// connections. It reports accepts/s and the p99 of one Accept.
//
//	go test -run '^$' -bench BenchmarkAccept -benchtime 5s ./storage/postgres
func BenchmarkAccept(b *testing.B) {
	for _, tc := range []struct {
		name string
		opt  postgres.Options
		pool string
	}{
		{"group/committers=1", postgres.Options{Committers: 1}, ""},
		{"group/committers=2", postgres.Options{Committers: 2}, ""},
		{"group/committers=4", postgres.Options{Committers: 4}, ""},
		{"tx-per-accept/conns=64", postgres.Options{Committers: 64, MaxGroup: 1}, "&pool_max_conns=66"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			db := mustOpenURL(b, pgtest.URL(b)+tc.pool, tc.opt)
			body := make([]byte, 2048)
			var n atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			b.SetParallelism(32) // 32 × GOMAXPROCS(2) = 64 callers
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					e := storetest.NewEvent("shop", fmt.Sprintf("evt_%016x", uint64(n.Add(1))*0x9e3779b97f4a7c15), time.Now())
					e.Body = body
					start := time.Now()
					if _, err := db.Accept(context.Background(), e, time.Now().Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")}); err != nil {
						b.Error(err)
						return
					}
					mine = append(mine, time.Since(start))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "accepts/s")
			if len(lat) > 0 {
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			}
			if commits, writes, _ := db.CommitCounts(); commits > 0 {
				b.ReportMetric(float64(writes)/float64(commits), "writes/commit")
			}
		})
	}
}
