package app

import (
	"fmt"
	"time"
)

// The counting rules, written once for both stores: what each write a
// store makes (an accepted event, a recorded attempt, fired pending
// deliveries) changes in the hourly counts, the counts by name and the
// lasts. A store only adds the changes it is given, in the transaction of
// the write (CountStore).

// KindDelta is n more of Kind in the hour of At.
type KindDelta struct {
	At   time.Time
	Kind Kind
	N    uint64
}

// NamedDelta is n more of (Kind, Name) in the hour of At.
type NamedDelta struct {
	At   time.Time
	Kind NameKind
	Name string
	N    uint64
}

// LastNote is a candidate for the last of (Kind, Name): a store keeps it
// unless it holds a later one (on a tie, the one noted later wins).
type LastNote struct {
	Kind NameKind
	Name string
	Last Last
}

// CountDelta is what one or more writes change in the counts. Its methods
// append the changes of one write; a store adds them all when it commits.
type CountDelta struct {
	Kinds []KindDelta
	Named []NamedDelta
	Lasts []LastNote
}

// Reset empties c, keeping its room.
func (c *CountDelta) Reset() {
	c.Kinds, c.Named, c.Lasts = c.Kinds[:0], c.Named[:0], c.Lasts[:0]
}

// Empty reports whether c changes nothing.
func (c *CountDelta) Empty() bool { return len(c.Kinds)+len(c.Named)+len(c.Lasts) == 0 }

func (c *CountDelta) kind(at time.Time, k Kind) {
	c.Kinds = append(c.Kinds, KindDelta{At: at, Kind: k, N: 1})
}

func (c *CountDelta) named(at time.Time, k NameKind, name string, n uint64) {
	c.Named = append(c.Named, NamedDelta{At: at, Kind: k, Name: name, N: n})
}

// Accepted adds what accepting e counts, in the hour it was received: it
// was received and accepted, its source accepted one, and it is the
// source's last accepted event; and what its plan counts (Routed).
func (c *CountDelta) Accepted(e *Event, plan *Plan) {
	at := e.ReceivedAt
	c.Routed(at, plan)
	c.kind(at, KindReceived)
	c.kind(at, KindAccepted)
	c.named(at, SourceAccepted, e.Source, 1)
	c.Lasts = append(c.Lasts, LastNote{Kind: SourceAccepted, Name: e.Source, Last: Last{At: at}})
}

// Routed adds what the routes of an event accepted at at count: each
// debounce step as DebounceStep says (call it once the store applied them,
// with their Result set), one received and one unkeyed (sent at once) for
// each route whose key could not be built, and one filtered or one filter
// error for each route its filter turned away.
func (c *CountDelta) Routed(at time.Time, plan *Plan) {
	if plan == nil {
		return
	}
	for _, op := range plan.Debounce {
		c.DebounceStep(at, op)
	}
	for _, r := range plan.Unkeyed {
		c.named(at, RouteReceived, r, 1)
		c.named(at, RouteUnkeyed, r, 1)
	}
	for _, f := range plan.Filtered {
		if f.Err != "" {
			c.named(at, RouteFilterErrors, f.Route, 1)
		} else {
			c.named(at, RouteFiltered, f.Route, 1)
		}
	}
}

// DebounceStep adds what an accepted event's step on a debounced route
// counts at at: the route received one, and one merged (an event merged,
// KindDebounced, too) or deferred, as op.Result says.
func (c *CountDelta) DebounceStep(at time.Time, op *DebounceOp) {
	switch op.Result {
	case Merged:
		c.kind(at, KindDebounced)
		c.named(at, RouteReceived, op.Route, 1)
		c.named(at, RouteMerged, op.Route, 1)
	case Deferred:
		c.named(at, RouteReceived, op.Route, 1)
		c.named(at, RouteDeferred, op.Route, 1)
	default:
		c.named(at, RouteReceived, op.Route, 1)
	}
}

// Attempt adds what an attempt of a delivery to dest counts in the hour it
// ended (end), by the state it left the delivery in: delivered, retrying
// (pending again) or dead, and for dest one delivered or one failed, kept
// as dest's last delivery or last failure (with its error).
func (c *CountDelta) Attempt(dest string, a *Attempt, state DeliveryState, end time.Time) {
	switch state {
	case Delivered:
		c.kind(end, KindDelivered)
	case Pending:
		c.kind(end, KindRetrying)
	case Dead:
		c.kind(end, KindDead)
	}
	if state == Delivered {
		c.named(end, DestDelivered, dest, 1)
		c.Lasts = append(c.Lasts, LastNote{Kind: DestDelivered, Name: dest, Last: Last{At: end}})
		return
	}
	c.named(end, DestFailed, dest, 1)
	c.Lasts = append(c.Lasts, LastNote{Kind: DestFailed, Name: dest, Last: Last{At: end, Text: AttemptError(a)}})
}

// Fired adds what pending deliveries that fired at now count: fired[route]
// sent by each debounced route.
func (c *CountDelta) Fired(now time.Time, fired map[string]int) {
	for route, n := range fired {
		c.named(now, RouteSent, route, uint64(n))
	}
}

// AttemptError is what a failed attempt keeps as its destination's last
// error: its error, else its HTTP status, cut to MaxLastText.
func AttemptError(a *Attempt) string {
	if a.Error == "" && a.Status != 0 {
		return fmt.Sprintf("HTTP %d", a.Status)
	}
	return LastText(a.Error)
}
