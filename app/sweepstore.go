// The sweeper's chunking (app/sweep); what it needs of a store is app.SweepStore.

package app

import "time"

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
