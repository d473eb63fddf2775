package bboltstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAccept measures durable accepts (one fsync'd group commit shared
// by concurrent callers) at 64 concurrent callers with random ids, empty
// and 2 KiB bodies. Report: ns/op is per accepted event. (bbolt's Batch
// measured 2-3x slower than the committer on 2026-11-29; BENCHMARKS.md.)
func BenchmarkAccept(b *testing.B) {
	for _, bs := range []struct{ body int }{{0}, {2048}} {
		name := "committer"
		if bs.body > 0 {
			name += fmt.Sprintf("/body=%d", bs.body)
		}
		b.Run(name, func(b *testing.B) {
			db := MustOpenDB(b)
			var n atomic.Int64
			body := make([]byte, bs.body)
			b.SetParallelism(32) // 32 × GOMAXPROCS(2) = 64 callers
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e := newEvent("shop", randomID(uint64(n.Add(1))), t0)
					if bs.body > 0 {
						e.Body = body
					}
					// Expiry follows arrival, as in serve (received + retention).
					if _, err := db.Accept(context.Background(), e, time.Now().Add(time.Hour), nil); err != nil {
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
