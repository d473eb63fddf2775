// What the sweeper (app/sweep) needs of a store, and its chunking.

package app

import (
	"context"
	"time"
)

// DefaultSweepChunk is how many records one sweep transaction deletes. Each
// chunk is its own short transaction, so ingest batches commit in between.
// A small chunk keeps each commit short (measured when ids were a B+tree
// keyed by id, where each forgotten id dirtied a page of its own: 5,000 per
// chunk held ingest p99 near 200 ms; ids now expire from the left edge of
// the time-ordered expiry index).
const DefaultSweepChunk = 500

// DefaultChunkPause is the rest between two sweep transactions, so that
// ingest commits get the writer in between.
const DefaultChunkPause = 5 * time.Millisecond

// SweepStore is what the Sweeper needs of the store: each method forgets
// or deletes what retention no longer keeps, a bounded chunk at a time.
type SweepStore interface {
	// ForgetExpiredIDs forgets at most limit ids that expired at or before
	// now, and reports how many it forgot.
	ForgetExpiredIDs(ctx context.Context, now time.Time, limit int) (int, error)
	// DeleteEventsBefore deletes at most limit events received before t,
	// and reports how many it deleted.
	DeleteEventsBefore(ctx context.Context, t time.Time, limit int) (int, error)
	// PruneWindows forgets at most limit rate-limit windows that emptied
	// by now, and reports how many.
	PruneWindows(ctx context.Context, now time.Time, limit int) (int, error)
	// DeleteAuditBefore deletes at most limit audit entries older than t,
	// and reports how many it deleted.
	DeleteAuditBefore(ctx context.Context, t time.Time, limit int) (int, error)
	// PruneCounts forgets the hours that end at or before t (their counts
	// by name too), and reports how many it forgot.
	PruneCounts(ctx context.Context, before time.Time) (int, error)
}
