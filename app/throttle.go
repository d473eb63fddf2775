package app

import (
	"sync/atomic"
	"time"
)

// Throttle lets one log line through per interval and counts the ones it
// held back, so that a flood of bad requests cannot flood the log. The
// zero value is ready; it is safe for concurrent use.
type Throttle struct {
	last atomic.Int64 // unix nanoseconds of the last line let through
	held atomic.Uint64
}

// Allow reports whether a line may be written at now, at most one per
// every, and how many were held back since the last one written.
func (t *Throttle) Allow(now time.Time, every time.Duration) (ok bool, held uint64) {
	last, at := t.last.Load(), now.UnixNano()
	if last != 0 && at-last < int64(every) || !t.last.CompareAndSwap(last, at) {
		t.held.Add(1)
		return false, 0
	}
	return true, t.held.Swap(0)
}
