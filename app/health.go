package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// StorageHealth follows whether the store's commits succeed. While they
// fail (a full disk, a failing one) the overview shows a banner, /healthz
// answers "degraded", hookbox_storage_failing is 1 (app/metrics), an alert goes out, the
// dispatcher holds its sends (their outcome could not be recorded), and
// the failures are logged at most once a second. It hears of every commit
// from the store (bboltstore.DB.OnCommit); Watch tries a small write while
// commits fail, so that it sees them work again without any traffic.
type StorageHealth struct {
	// Logger receives the changes of state.
	Logger *slog.Logger
	// OnRecover, when set, is called when commits work again.
	OnRecover func()
	// What the pages and alerts say of the store; newStorageHealth sets
	// bbolt's words, main replaces them on PostgreSQL. Store names where
	// the state is ("the data file"), Fix what to do while commits fail,
	// and DamageFix what to do about records set aside.
	Store, Fix, DamageFix string

	now     func() time.Time
	failing atomic.Bool
	mu      sync.Mutex
	cur     StorageEpisode // while failing
	last    StorageEpisode // the last one that ended
	logged  time.Time      // when the last failure line was logged
	quiet   int            // failures not logged since

	// failedCommit tells the metrics of a commit that failed (NewStats
	// sets it; nil: nobody is told).
	failedCommit func()
}

// StorageEpisode is a stretch of time in which commits failed.
type StorageEpisode struct {
	Since, Until time.Time // Until is zero while it lasts
	Commits      uint64    // commits that failed
	Refused      uint64    // webhooks answered 503
	Unrecorded   uint64    // attempts whose outcome could not be stored
	LastError    string
}

// StorageError is /healthz's error while commits fail.
type StorageError struct{ StorageEpisode }

func (e *StorageError) Error() string {
	return fmt.Sprintf("storage writes failing since %s: %s", e.Since.UTC().Format(time.RFC3339), e.LastError)
}

// newStorageHealth builds the follower of commits.
func newStorageHealth(now func() time.Time) *StorageHealth {
	return &StorageHealth{now: now, Logger: slog.With("component", "storage"), Store: "the data file",
		Fix:       "Free space on the data directory's disk.",
		DamageFix: "The disk or a restore may have damaged the file: take a backup now and check the disk."}
}

// Committed hears the outcome of one commit of the store.
func (h *StorageHealth) Committed(err error) {
	if err == nil && !h.failing.Load() {
		return
	}
	h.mu.Lock()
	now := h.now()
	if err != nil {
		if !h.failing.Load() {
			h.cur = StorageEpisode{Since: now}
			h.failing.Store(true)
		}
		h.cur.Commits++
		h.cur.LastError = err.Error()
		h.mu.Unlock()
		if h.failedCommit != nil {
			h.failedCommit()
		}
		return
	}
	h.cur.Until = now
	h.last, h.cur = h.cur, StorageEpisode{}
	h.failing.Store(false)
	last := h.last
	h.mu.Unlock()
	h.Logger.Info("storage works again", "failed_for", last.Until.Sub(last.Since).Round(time.Millisecond),
		"failed_commits", last.Commits, "refused", last.Refused, "unrecorded", last.Unrecorded)
	if h.OnRecover != nil {
		h.OnRecover()
	}
}

// Failing reports whether the last commit failed.
func (h *StorageHealth) Failing() bool { return h != nil && h.failing.Load() }

// State returns the episode in progress (ok false when commits work) and
// the last one that ended.
func (h *StorageHealth) State() (cur StorageEpisode, failing bool, last StorageEpisode) {
	if h == nil {
		return cur, false, last
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cur, h.failing.Load(), h.last
}

// Err is nil while commits work, else a *StorageError.
func (h *StorageHealth) Err() error {
	if cur, failing, _ := h.State(); failing {
		return &StorageError{cur}
	}
	return nil
}

// Refused logs that a webhook was answered 503 because its event could
// not be stored, and counts it while commits fail.
func (h *StorageHealth) Refused(l *slog.Logger, err error, attrs ...any) {
	h.count(func(e *StorageEpisode) { e.Refused++ })
	h.Failure(l, "store event", err, attrs...)
}

// Unrecorded logs that n attempts could not be recorded, and counts them
// while commits fail.
func (h *StorageHealth) Unrecorded(l *slog.Logger, n int, err error, attrs ...any) {
	h.count(func(e *StorageEpisode) { e.Unrecorded += uint64(n) })
	h.Failure(l, "record attempts", err, append(attrs, "attempts", n)...)
}

func (h *StorageHealth) count(f func(*StorageEpisode)) {
	if h == nil {
		return
	}
	h.mu.Lock()
	if h.failing.Load() {
		f(&h.cur)
	}
	h.mu.Unlock()
}

// Failure logs a storage failure on l, at most a line a second for all of
// them: a full disk fails every request, and a line for each filled the
// journal (167,000 lines in 25 s). A line says how many were not logged
// since the one before.
func (h *StorageHealth) Failure(l *slog.Logger, msg string, err error, attrs ...any) {
	attrs = append(attrs, slog.Any("error", err))
	if h == nil {
		l.Error(msg, attrs...)
		return
	}
	h.mu.Lock()
	now := h.now()
	if !h.logged.IsZero() && now.Sub(h.logged) < time.Second && now.After(h.logged) {
		h.quiet++
		h.mu.Unlock()
		return
	}
	quiet := h.quiet
	h.logged, h.quiet = now, 0
	h.mu.Unlock()
	if quiet > 0 {
		attrs = append(attrs, "not_logged_since_last_line", quiet)
	}
	l.Error(msg, attrs...)
}

// probeEvery is how often Watch tries a write while commits fail.
const probeEvery = time.Second

// Watch calls probe, a small durable write, every probeEvery while commits
// fail, until ctx is done: the store tells h of its outcome, so h learns
// that storage works again even when no webhook arrives (a load balancer
// may have taken the node out on /healthz's 503). With beat > 0 it also
// probes at least every beat whatever the state, and calls alive each
// time the probe came back: the probe is a commit, so a committer stuck
// in a write (a disk that hangs, a database that never answers) holds
// the probe and stops the beats, which is what the service manager's
// watchdog waits for (serve sends WATCHDOG=1 from alive). A commit that
// fails came back: the store is not stuck, and a restart would not mend
// a full disk.
func (h *StorageHealth) Watch(ctx context.Context, probe func() error, beat time.Duration, alive func()) {
	every := probeEvery
	if beat > 0 && beat < every {
		every = beat
	}
	t := time.NewTicker(every)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		probed := false
		if h.Failing() {
			probe() // its outcome reaches Committed
			probed = true
		}
		if beat > 0 && time.Since(last) >= beat {
			if !probed {
				probe()
			}
			last = time.Now()
			alive()
		}
	}
}
