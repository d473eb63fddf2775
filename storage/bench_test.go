package storage_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkAccept measures durable accepts (one fsync'd group commit shared
// by concurrent callers) at 64 concurrent callers, for several group-commit
// settings. Report: ns/op is per accepted event.
func BenchmarkAccept(b *testing.B) {
	for _, bs := range []struct {
		delay time.Duration
		size  int
		body  int
	}{
		{0, 0, 0},                        // hookbox's committer
		{0, 0, 2048},                     // hookbox's committer, 2 KiB bodies
		{10 * time.Millisecond, 1000, 0}, // bbolt's Batch with its defaults
		{2 * time.Millisecond, 512, 0},
		{500 * time.Microsecond, 512, 0},
		{200 * time.Microsecond, 512, 0},
		{100 * time.Microsecond, 64, 0},
	} {
		name := "committer"
		if bs.body > 0 {
			name += fmt.Sprintf("/body=%d", bs.body)
		}
		if bs.delay > 0 {
			name = fmt.Sprintf("batch/delay=%v/size=%d", bs.delay, bs.size)
		}
		b.Run(name, func(b *testing.B) {
			db := MustOpenDB(b)
			if bs.delay > 0 {
				db.SetBatch(bs.delay, bs.size)
			}
			var n atomic.Int64
			body := make([]byte, bs.body)
			b.SetParallelism(32) // 32 × GOMAXPROCS(2) = 64 callers
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					e := newEvent("shop", fmt.Sprintf("evt_%d", n.Add(1)), t0)
					if bs.body > 0 {
						e.Body = body
					}
					if _, err := db.Accept(context.Background(), e, t0.Add(time.Hour), nil); err != nil {
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
