// Package app is hookbox's domain: configuration, the receive path that turns
// a verified webhook into a durable event, and the jobs that keep state tidy.
// Technology lives elsewhere: bbolt in storage, HTTP in app/web.
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

// Store is the durable state behind hookbox. storage.DB implements it on
// bbolt; a replicated store could implement it later.
type Store interface {
	// Accept records e's id for its source until idExpires and stores e, in
	// one durable transaction. It reports duplicate=true, storing nothing,
	// when the id is already remembered and unexpired at e.ReceivedAt.
	Accept(ctx context.Context, e *Event, idExpires time.Time) (duplicate bool, err error)
	// ForgetExpiredIDs forgets at most limit ids that expired at or before
	// now, and reports how many it forgot.
	ForgetExpiredIDs(now time.Time, limit int) (int, error)
	// DeleteEventsBefore deletes at most limit events received before t,
	// and reports how many it deleted.
	DeleteEventsBefore(t time.Time, limit int) (int, error)
}
