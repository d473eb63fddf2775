package app

import (
	"sync"
	"time"
)

// Throttle lets at most n log lines through per window and counts the ones
// it held back, so that a flood (of bad requests, accepted events, failed
// handshakes) cannot flood the log. A window opens at the first line let
// through after the previous one closed and lasts every. The zero value is
// ready; it is safe for concurrent use. It is the one log throttle: the
// receiver, the web edge and the certificate watcher all use it.
type Throttle struct {
	mu    sync.Mutex
	start int64  // unix nanoseconds when the current window opened (0: none yet)
	n     int    // lines let through in the current window
	held  uint64 // lines held back since the last one let through
}

// Allow reports whether a line may be written at now, at most one per
// every, and how many were held back since the last one written.
func (t *Throttle) Allow(now time.Time, every time.Duration) (ok bool, held uint64) {
	return t.AllowN(now, every, 1)
}

// AllowN reports whether a line may be written at now, at most n per
// every, and how many were held back since the last one written (only the
// first line of a window can have any).
func (t *Throttle) AllowN(now time.Time, every time.Duration, n int) (ok bool, held uint64) {
	at := now.UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.start == 0 || at-t.start >= int64(every) {
		t.start, t.n = at, 0
	}
	if t.n >= n {
		t.held++
		return false, 0
	}
	t.n++
	held, t.held = t.held, 0
	return true, held
}
