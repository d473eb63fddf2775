package app

// The role of the sources' quarantines (app/receive keeps and rechecks
// them, app/web lists and clears them): see stores.go and quarantine.go.

import (
	"context"
	"time"
)

// QuarantineStore keeps each source's quarantine (the receiver's, the
// admin API's).
type QuarantineStore interface {
	// KeepQuarantined adds each of qs to its source's quarantine when
	// QuarantineFit says so, making the room it says, and sets the ID of
	// those kept; it returns which were kept. One transaction for all.
	KeepQuarantined(ctx context.Context, qs []*Quarantined, l QuarantineLimits) (kept []bool, err error)
	// Quarantined returns up to limit of source's kept requests with an ID
	// above after, oldest first, headers and bodies included.
	Quarantined(ctx context.Context, source string, after uint64, limit int) ([]Quarantined, error)
	// QuarantineUsage reports how many requests source keeps and their
	// bytes (Size).
	QuarantineUsage(ctx context.Context, source string) (n int, bytes int64, err error)
	// DeleteQuarantined deletes source's kept requests of ids (all of
	// them when ids is nil) and reports how many it deleted.
	DeleteQuarantined(ctx context.Context, source string, ids []uint64) (int, error)
	// DeleteQuarantinedBefore deletes at most limit kept requests of any
	// source that arrived before t, and reports how many.
	DeleteQuarantinedBefore(ctx context.Context, t time.Time, limit int) (int, error)
}
