// Package app is hookbox's domain: the configuration types (app/config loads
// and checks them), the receive path that turns a verified webhook into a
// durable event, the dispatcher that delivers it, and the jobs that keep
// state tidy. Its Store is implemented by storage/bboltstore (bbolt) and
// storage/postgres (PostgreSQL); HTTP is served by app/web.
package app

import (
	"context"
	"time"
)

// Event is one accepted webhook: what the sender sent, byte-exact.
type Event struct {
	// Seq is the store's sequence number, assigned on accept.
	Seq        uint64
	Source     string
	ID         string
	Topic      string
	ReceivedAt time.Time
	Header     []HeaderField
	Body       []byte
}

// HeaderField is one request header kept with an event.
type HeaderField struct {
	Name  string
	Value string
}

// Store is the durable state behind hookbox. bboltstore.DB implements it on
// one bbolt file, postgres.DB on PostgreSQL; storetest checks both alike.
type Store interface {
	CountStore

	// Accept records e's id for its source until idExpires, stores e and
	// carries out plan (deliveries due now, debounced pending deliveries,
	// setting each DebounceOp's Result), in one durable transaction. It
	// reports duplicate=true, storing nothing, when the id is already
	// remembered and unexpired at e.ReceivedAt. plan may be nil (unrouted).
	Accept(ctx context.Context, e *Event, idExpires time.Time, plan *Plan) (duplicate bool, err error)
	// FirePending turns the pending deliveries due by now into deliveries
	// and frees their keys. It reports how many fired per route, and the due
	// time of the next pending one (zero if none).
	FirePending(ctx context.Context, now time.Time) (fired map[string]int, next time.Time, err error)
	// ForgetExpiredIDs forgets at most limit ids that expired at or before
	// now, and reports how many it forgot.
	ForgetExpiredIDs(ctx context.Context, now time.Time, limit int) (int, error)
	// DeleteEventsBefore deletes at most limit events received before t,
	// and reports how many it deleted.
	DeleteEventsBefore(ctx context.Context, t time.Time, limit int) (int, error)

	// DueDeliveries returns up to limit deliveries to dest due by now, with
	// their events, skipping ids for which skip is true; next is the due time
	// of the first pending delivery not returned (zero if none).
	DueDeliveries(ctx context.Context, dest string, now time.Time, limit int, skip func(id uint64) bool) (work []Work, next time.Time, err error)
	// WaitingDeliveries returns up to limit pending deliveries to dest,
	// due or not, that come after the delivery (afterDue, afterID) in due
	// order (from the first when afterDue is zero), with their events,
	// skipping ids for which skip is true: the retries of a destination
	// that answers again, taken early. A delivery that cannot be sent is
	// set aside as DueDeliveries does.
	WaitingDeliveries(ctx context.Context, dest string, afterDue time.Time, afterID uint64, limit int, skip func(id uint64) bool) ([]Work, error)
	// RecordAttempts records several attempts in one write; errs[i] is
	// recs[i]'s error, nil when it is stored. A stored record's Attempt.N
	// is set. Each attempt moves its delivery to the next step of its
	// schedule (Delivery.Tries) unless it is Early.
	RecordAttempts(ctx context.Context, recs []AttemptRecord) (errs []error)
	// Replay makes a dead or delivered delivery pending again, due at now.
	Replay(ctx context.Context, id uint64, now time.Time) error
	// ReplayDead replays every dead delivery and reports how many.
	ReplayDead(ctx context.Context, now time.Time) (int, error)
	// Delivery returns a delivery and its attempts.
	Delivery(ctx context.Context, id uint64) (*Delivery, []*Attempt, error)
	// DeadLetters pages through dead deliveries by id and counts them all.
	DeadLetters(ctx context.Context, after uint64, limit int) ([]*Delivery, int, error)
	// CountDead returns the number of dead deliveries.
	CountDead(ctx context.Context) (int, error)
	// CountPending returns the number of deliveries not yet done: due now or
	// later, and debounced ones waiting for their window.
	CountPending(ctx context.Context) (int, error)
	// PruneWindows forgets at most limit rate-limit windows that emptied
	// by now, and reports how many.
	PruneWindows(ctx context.Context, now time.Time, limit int) (int, error)
	// Poisoned returns up to limit of the records set aside because they
	// could not be decoded, newest first, and how many there are in all.
	Poisoned(ctx context.Context, limit int) ([]Poison, int, error)
}

// Poison is a stored record that could not be decoded (a bit flip, a
// layout a newer build wrote), set aside by the store so that everything
// else flows on: reads skip it, and what it held back is dead-lettered
// when that can be done without it.
type Poison struct {
	ID     uint64    // its place in the list of records set aside
	At     time.Time // when it was set aside
	Kind   string    // "event", "delivery" or "pending delivery"
	Key    string    // the record's key as people read it: a seq, an id, a route and entity key
	Reason string    // why it cannot be decoded
	// Delivery and Destination name the delivery it held back (0, "": none).
	Delivery    uint64
	Destination string
}

// EventQuery selects events for the list, newest first.
type EventQuery struct {
	Source string
	Topic  string // a glob
	Status string // "delivered", "pending", "dead", "merged", "waiting", "unrouted", or "" for all
	ID     string // exact event id (with or without Source)
	Before uint64 // cursor: only events with a smaller seq (0: from the newest)
	Since  time.Time
	Until  time.Time
	Limit  int
}

// EventSummary is one row of the event list.
type EventSummary struct {
	Seq        uint64
	Source     string
	ID         string
	Topic      string
	ReceivedAt time.Time
	Size       int
	Status     string // worst state of its deliveries, "merged", "waiting" or "unrouted"
	// WaitingUntil is when the debounced delivery that will send the event
	// is due (status "waiting": no delivery yet, a debounce window open).
	WaitingUntil time.Time
}
