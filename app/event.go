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
	// Unrouted says why no route took the event when a filter turned it
	// away ("" otherwise): which routes' filters, and their errors, at most
	// MaxUnroutedLen bytes of valid UTF-8 without control characters.
	Unrouted string
}

// HeaderField is one request header kept with an event.
type HeaderField struct {
	Name  string
	Value string
}

// Store is the sum of the roles below: the whole durable state behind
// hookbox. bboltstore.DB implements it on one bbolt file, postgres.DB on
// PostgreSQL; storetest checks both alike. Every service takes only the
// role it uses (IngestStore, Outbox, SweepStore, StatsStore, AlertStore,
// ReadModel, MetaStore, BackupStore, StreamStore); the sum is for wiring and tests.
type Store interface {
	IngestStore
	Outbox
	SweepStore
	StatsStore
	AlertStore
	ReadModel
	StreamStore
}

// Outbox is what the Dispatcher needs of the store: the deliveries due,
// the ones waiting beyond them, where to record attempts, and the
// debounced deliveries to fire. Every method honours ctx: a done ctx
// stops a call before it starts work and returns ctx's error.
type Outbox interface {
	// FirePending turns the pending deliveries due by now into deliveries
	// and frees their keys. It reports how many fired per route, and the due
	// time of the next pending one (zero if none).
	FirePending(ctx context.Context, now time.Time) (fired map[string]int, next time.Time, err error)
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
	Status string // one of EventStates (see CheckEventStatus), or "" for all
	ID     string // exact event id (with or without Source)
	Before uint64 // cursor: only events with a smaller seq (0: from the newest)
	Since  time.Time
	Until  time.Time
	Limit  int
	// Q, when not "", keeps the events whose body contains it, ASCII
	// letters in either case (see Search); at least MinSearch characters.
	Q string
}

// EventSummary is one row of the event list.
type EventSummary struct {
	Seq        uint64
	Source     string
	ID         string
	Topic      string
	ReceivedAt time.Time
	Size       int
	Status     string // one of EventStates: the worst of its deliveries' words (EventWord), or merged, waiting, unrouted, unreadable
	// WaitingUntil is when the debounced delivery that will send the event
	// is due (status "waiting": no delivery yet, a debounce window open).
	WaitingUntil time.Time
}
