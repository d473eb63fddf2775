package cli

import (
	"context"
	"log/slog"
	"time"

	"hookbox/storage/bboltstore"
)

// sparseCompactor is the bbolt store's online compaction (bboltstore
// CompactIfSparse); PostgreSQL has its own vacuum.
type sparseCompactor interface {
	CompactIfSparse(ctx context.Context) (bboltstore.Compaction, bool, error)
}

// compactAfterSweep gives the space the sweep freed back to the file
// system when it is more than a third of the data file, and logs what it
// did.
func compactAfterSweep(ctx context.Context, store any, logger *slog.Logger) {
	c, ok := store.(sparseCompactor)
	if !ok {
		return
	}
	res, ran, err := c.CompactIfSparse(ctx)
	switch {
	case err != nil:
		logger.Warn("compaction failed", slog.Any("error", err), "pause", res.Pause.Round(time.Microsecond))
	case ran:
		logger.Info("compaction done", "bytes_before", res.Before, "bytes_after", res.After, "rounds", res.Rounds,
			"pause", res.Pause.Round(time.Microsecond), "duration", res.Took.Round(time.Millisecond))
	}
}
