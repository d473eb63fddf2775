package app

import (
	"context"
	"time"
)

// ReadModel is what the status page and the admin API read of a store,
// and the replays they start; both stores implement it.
type ReadModel interface {
	// ListEvents returns events matching q, newest first, and the cursor
	// of the next page (0 when there is none).
	ListEvents(ctx context.Context, q EventQuery) ([]EventSummary, uint64, error)
	// Event returns the event stored under seq, or nil when there is none.
	Event(ctx context.Context, seq uint64) (*Event, error)
	// EventDeliveries returns the deliveries of event seq.
	EventDeliveries(ctx context.Context, seq uint64) ([]*Delivery, error)
	// Delivery returns a delivery and its attempts.
	Delivery(ctx context.Context, id uint64) (*Delivery, []*Attempt, error)
	// DeadLetters pages through dead deliveries by id and counts them all.
	DeadLetters(ctx context.Context, after uint64, limit int) ([]*Delivery, int, error)
	// MergedInto returns the seqs of the events merged into event seq's
	// delivery by debouncing.
	MergedInto(ctx context.Context, seq uint64) ([]uint64, error)
	// PreviousInGroup returns the delivery before d in its order group
	// (same destination, route and order key: the highest lower id), nil
	// when d has no order key or is the first of its group: the page says
	// when d went out after a dead one.
	PreviousInGroup(ctx context.Context, d *Delivery) (*Delivery, error)
	// Backlog returns how many deliveries to dest are pending, counting at
	// most limit.
	Backlog(ctx context.Context, dest string, limit int) (int, error)
	// CountDead returns the number of dead deliveries.
	CountDead(ctx context.Context) (int, error)
	// CountPending returns the number of deliveries not yet done.
	CountPending(ctx context.Context) (int, error)
	// CountRetrying returns how many pending deliveries have had an
	// attempt (and wait for a retry), counting at most limit.
	CountRetrying(ctx context.Context, limit int) (int, error)
	// Poisoned returns up to limit of the records set aside because they
	// could not be decoded, newest first, and how many there are in all.
	Poisoned(ctx context.Context, limit int) ([]Poison, int, error)
	// Replay makes a dead or delivered delivery pending again, due at now.
	Replay(ctx context.Context, id uint64, now time.Time) error
	// ReplayDead replays every dead delivery and reports how many.
	ReplayDead(ctx context.Context, now time.Time) (int, error)
	// RetryNow makes the waiting deliveries ids (pending, due after now)
	// due at now, keeping their attempts and tries, and reports how many
	// it moved; one due already or in flight is left as is. It changes
	// nothing when one of ids is unknown (an error wrapping ErrNotFound)
	// or is delivered or dead (an ECONFLICT error: RetryNowVerdict). On a
	// store shared by nodes it tells the others, as an accept does.
	RetryNow(ctx context.Context, ids []uint64, now time.Time) (int, error)
	// RetryDestination makes every waiting delivery to dest due at now,
	// as RetryNow does, and reports how many it moved.
	RetryDestination(ctx context.Context, dest string, now time.Time) (int, error)
}
