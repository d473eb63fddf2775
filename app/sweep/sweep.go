// The sweeper: what retention no longer keeps is removed, a bounded
// chunk per transaction.

package sweep

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"hookbox/app"
)

// Sweeper forgets expired event ids, deletes old events and audit entries,
// and forgets the hourly counts older than the status page shows.
type Sweeper struct {
	Store app.SweepStore
	// IDs, Events and Audit are the retention periods (Config.Retention);
	// set them before the first Sweep, then through Apply.
	IDs, Events, Audit time.Duration
	// Quarantine is how long a source keeps a refused request ([quarantine]
	// keep; 0: for ever).
	Quarantine time.Duration
	mu         sync.Mutex // guards the periods once sweeps run
	// Chunk bounds the records deleted per transaction.
	Chunk int
	// Pause is the rest between two chunks.
	Pause time.Duration
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger
	// Stats, when set, counts sweep runs.
	Stats *app.Stats
}

// New builds a sweeper for cfg's retention over store.
func New(cfg *app.Config, store app.SweepStore) *Sweeper {
	return &Sweeper{
		Store:      store,
		IDs:        cfg.Retention.EventIDs,
		Events:     cfg.Retention.Events,
		Audit:      cfg.Retention.Audit,
		Quarantine: cfg.Quarantine.Keep,
		Chunk:      app.DefaultSweepChunk,
		Pause:      app.DefaultChunkPause,
		Now:        time.Now,
		Logger:     slog.With("component", "sweep"),
	}
}

// Apply puts cfg's retention in force from the next sweep on.
func (s *Sweeper) Apply(cfg *app.Config) {
	s.mu.Lock()
	s.IDs, s.Events, s.Audit = cfg.Retention.EventIDs, cfg.Retention.Events, cfg.Retention.Audit
	s.Quarantine = cfg.Quarantine.Keep
	s.mu.Unlock()
}

// Result counts what one sweep removed and how many transactions it took.
type Result struct {
	IDs, Events, Audit, Windows, Chunks int
	// Quarantined is how many refused requests left the quarantines.
	Quarantined int
	// Hours is how many hours of counts were forgotten.
	Hours int
}

// Sweep removes everything expired at Now, one bounded chunk per
// transaction, until nothing expired is left or ctx is done.
func (s *Sweeper) Sweep(ctx context.Context) (Result, error) {
	var res Result
	now := s.Now()
	s.mu.Lock()
	events, audit, quarantine := s.Events, s.Audit, s.Quarantine
	s.mu.Unlock()
	for _, step := range []struct {
		count *int
		fn    func(limit int) (int, error)
	}{
		{&res.IDs, func(limit int) (int, error) { return s.Store.ForgetExpiredIDs(ctx, now, limit) }},
		{&res.Events, func(limit int) (int, error) { return s.Store.DeleteEventsBefore(ctx, now.Add(-events), limit) }},
		{&res.Audit, func(limit int) (int, error) {
			if audit <= 0 { // not set: a Sweeper built without it keeps the log
				return 0, nil
			}
			return s.Store.DeleteAuditBefore(ctx, now.Add(-audit), limit)
		}},
		{&res.Windows, func(limit int) (int, error) { return s.Store.PruneWindows(ctx, now, limit) }},
		{&res.Quarantined, func(limit int) (int, error) {
			if quarantine <= 0 {
				return 0, nil
			}
			return s.Store.DeleteQuarantinedBefore(ctx, now.Add(-quarantine), limit)
		}},
	} {
		for {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			n, err := step.fn(s.Chunk)
			if err != nil {
				return res, err
			}
			*step.count += n
			res.Chunks++
			if n < s.Chunk {
				break
			}
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(s.Pause):
			}
		}
	}
	// Few keys (one an hour since the last sweep): one transaction.
	n, err := s.Store.PruneCounts(ctx, app.HourStart(app.Hour(now)-app.CountHours+1))
	res.Hours = n
	res.Chunks++
	return res, err
}

// Run is the cron job: it sweeps and logs the outcome.
func (s *Sweeper) Run(ctx context.Context) {
	start := time.Now()
	res, err := s.Sweep(ctx)
	s.Stats.Swept(err)
	if err != nil {
		s.Logger.Error("sweep failed", slog.Any("error", err), "ids", res.IDs, "events", res.Events)
		return
	}
	s.Logger.Info("sweep done", "ids", res.IDs, "events", res.Events, "audit", res.Audit, "quarantined", res.Quarantined, "chunks", res.Chunks,
		"duration", time.Since(start).Round(time.Millisecond))
}
