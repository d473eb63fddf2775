package app

// The routing rules a route may carry besides its source and topics: a
// filter that decides whether the route takes an event, and a transform
// that makes the body its destinations receive. The domain only calls
// them; app/rules compiles them from CEL at config load.

// RuleInput is what a route's rules see of one event, as received.
type RuleInput struct {
	Source string
	Topic  string
	ID     string
	Header []HeaderField
	Body   []byte
	// Parsed is the rules engine's own form of Body and Header, made by
	// the first rule that reads them and kept for the event's other
	// routes, so the body is parsed once however many routes. Only the
	// engine reads or sets it.
	Parsed any
}

// Filter decides whether a route takes an event.
type Filter interface {
	// Match reports whether the route takes in. An error (a missing
	// field, a wrong type, the cost limit) means it does not; the caller
	// counts it.
	Match(in *RuleInput) (bool, error)
	// String is the expression as configured.
	String() string
}

// Transform makes the body a route's destinations receive.
type Transform interface {
	// Apply returns the body for in and its Content-Type, at most max
	// bytes long; an error says why none can be made.
	Apply(in *RuleInput, max int) (body []byte, contentType string, err error)
	// String is the expression as configured.
	String() string
}

// Direct is a delivery an accept opens at once: to Dest, for the route
// Route (the first in the config that takes the event and names Dest),
// in the order group OrderKey of that route ("" when the route has no
// order_key).
type Direct struct {
	Dest     string
	Route    string
	OrderKey string
}

// DirectTo returns deliveries to dests with no route or order key: what a
// plan held before routes had rules, for tests and tools.
func DirectTo(dests ...string) []Direct {
	out := make([]Direct, len(dests))
	for i, d := range dests {
		out[i] = Direct{Dest: d}
	}
	return out
}
