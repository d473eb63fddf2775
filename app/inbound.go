package app

import (
	"context"
	"strings"
	"time"
)

// MaxIDLen bounds an event id; longer ones are refused with 400.
const MaxIDLen = 512

// MaxTopicLen bounds a topic likewise. Providers that read it from the
// body (Stripe's type, Paddle's event_type) would otherwise let a sender
// put a 1 MB string into every row of the events list and its API.
const MaxTopicLen = 512

// Inbound is a webhook as it arrived: the raw body and every header. The
// receiver only reads them; Accept copies what it keeps.
type Inbound struct {
	Body   []byte
	Header []HeaderField
	// Client is the sender's address, for the log.
	Client string
}

// Get returns the value of the first header called name, ignoring case.
func (in *Inbound) Get(name string) string {
	for i := range in.Header {
		if strings.EqualFold(in.Header[i].Name, name) {
			return in.Header[i].Value
		}
	}
	return ""
}

// IngestStore is what the receiver (app/receive) needs of the store: to remember an id
// once and store its event, in one durable transaction.
type IngestStore interface {
	// Accept records e's id for its source until idExpires, stores e and
	// carries out plan (deliveries due now, debounced pending deliveries,
	// setting each DebounceOp's Result), in one durable transaction. It
	// reports duplicate=true, storing nothing, when the id is already
	// remembered and unexpired at e.ReceivedAt. plan may be nil (unrouted).
	// A ctx done before the write is handed to the store's commit returns
	// ctx's error and stores nothing; once handed over, Accept waits for
	// the commit whatever ctx says.
	Accept(ctx context.Context, e *Event, idExpires time.Time, plan *Plan) (duplicate bool, err error)
}
