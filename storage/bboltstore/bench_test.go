package bboltstore_test

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
)

// BenchmarkAccept measures durable accepts (one fsync'd group commit shared
// by concurrent callers) at 64 concurrent callers with random ids, empty
// and 2 KiB bodies, and routed (a delivery opened per event) at 16 and 64
// callers, with the committer's linger and without: the committer alone,
// what bench -compare's hookbox could reach if nothing else took time. Report: ns/op is per accepted event. (bbolt's Batch
// measured 2-3x slower than the committer on 2026-11-29; BENCHMARKS.md.)
func BenchmarkAccept(b *testing.B) {
	for _, bs := range []struct {
		body, callers    int
		routed, noLinger bool
	}{{0, 64, false, false}, {2048, 64, false, false},
		{2048, 16, true, false}, {2048, 64, true, false}, {2048, 16, true, true}, {2048, 64, true, true}} {
		name := "committer"
		if bs.body > 0 {
			name += fmt.Sprintf("/body=%d", bs.body)
		}
		if bs.routed { // a delivery opened per event, as serve's one route makes
			name += fmt.Sprintf("/routed/callers=%d", bs.callers)
		}
		if bs.noLinger { // SetLinger(0, 0): commit whatever is queued
			name += "/nolinger"
		}
		b.Run(name, func(b *testing.B) {
			db := MustOpenDB(b)
			if bs.noLinger {
				db.SetLinger(0, 0)
			}
			var n atomic.Int64
			body := make([]byte, bs.body)
			var plan *app.Plan
			if bs.routed {
				plan = &app.Plan{Direct: []app.Direct{{Dest: "sink", Route: "all"}}}
			}
			b.SetParallelism(bs.callers / runtime.GOMAXPROCS(0))
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e := newEvent("shop", randomID(uint64(n.Add(1))), t0)
					if bs.body > 0 {
						e.Body = body
					}
					// Expiry follows arrival, as in serve (received + retention).
					if _, err := db.Accept(context.Background(), e, time.Now().Add(time.Hour), plan); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "accepts/s")
			if commits, writes, pages := db.CommitCounts(); commits > 0 {
				b.ReportMetric(float64(writes)/float64(commits), "writes/commit")
				b.ReportMetric(float64(pages)/float64(b.N), "pages/event")
			}
		})
	}
}
