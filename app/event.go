// Package app is hookbox's domain: the configuration types (app/config loads
// and checks them), the receive path that turns a verified webhook into a
// durable event, the dispatcher that delivers it, and the jobs that keep
// state tidy. Its Store is implemented by storage/bboltstore (bbolt) and
// storage/postgres (PostgreSQL); HTTP is served by app/web.
package app

import (
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
	// Origin says how the event came when not as a webhook: OriginFetched
	// for one an upstream check took from the provider's API ("" for a
	// webhook received).
	Origin string
	// ProviderAt is when the provider says the event happened (a fetched
	// event's created time); zero when unknown.
	ProviderAt time.Time
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

// Work is a due delivery with its event, ready to send.
type Work struct {
	Delivery *Delivery
	Event    *Event
}

// EventSearch is a page of a body search.
type EventSearch struct {
	Rows []EventSummary
	// Next is the cursor of the next page (EventQuery.Before), 0 when the
	// search has looked at every event its query can select.
	Next uint64
	// SearchedUntil, when not zero, says the search stopped at its budget:
	// it looked at the events received from the start of the page back to
	// this time (the oldest it examined), and no further; Next goes on.
	SearchedUntil time.Time
	// Searched counts the events the page examined (0 for a store that
	// searches by an index).
	Searched int
	// Stopped says the search stopped at its time budget before it had
	// looked at everything its query selects: with SearchedUntil when the
	// store knows how far it looked (bbolt), without it when the whole
	// statement was cancelled (PostgreSQL's statement_timeout): then the
	// page has no rows, and a narrower query (source, since, until) is
	// the way on.
	Stopped bool
}
