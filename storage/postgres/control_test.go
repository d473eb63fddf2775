package postgres_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"hookbox/storage/postgres"
)

// TestDB_ReserveStarts: two nodes reserving a destination's starts at once
// get slots that never overlap, so together they keep its rate.
func TestDB_ReserveStarts(t *testing.T) {
	a := MustOpen(t, postgres.Options{})
	const spacing = 50 * time.Millisecond
	var (
		mu     sync.Mutex
		starts []time.Time
		wg     sync.WaitGroup
	)
	for range 2 { // two nodes' worth of reservations, racing
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				first, now, err := a.ReserveStarts(context.Background(), "pos", 2, spacing)
				if err != nil {
					t.Error(err)
					return
				}
				if first.Before(now.Add(-time.Second)) {
					t.Errorf("first slot %v long before the store's now %v", first, now)
				}
				mu.Lock()
				starts = append(starts, first, first.Add(spacing))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	for i := 1; i < len(starts); i++ {
		if gap := starts[i].Sub(starts[i-1]); gap < spacing {
			t.Fatalf("slots %d and %d are %v apart; want at least %v", i-1, i, gap, spacing)
		}
	}
	if len(starts) != 40 {
		t.Fatalf("%d slots; want 40", len(starts))
	}
}
