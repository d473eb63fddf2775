package app

import (
	"time"
	"unicode/utf8"
)

// Kind is one thing the status page counts per hour.
type Kind int

// The kinds counted per hour.
const (
	KindReceived  Kind = iota // every request to /in/ for a known source
	KindAccepted              // new events stored
	KindDuplicate             // ids already remembered
	KindRejected              // bad or missing signatures
	KindDebounced             // events merged into a pending delivery
	KindDelivered             // deliveries that reached their destination
	KindRetrying              // failed attempts that will be retried (attempts, not deliveries)
	KindDead                  // deliveries that ended dead
	NumKinds                  // the number of kinds
)

// KindNames are the kinds as the API names them (the keys of
// /api/v1/stats "counts"; KindRetrying keeps its first name).
var KindNames = [NumKinds]string{"received", "accepted", "duplicate", "rejected", "debounced", "delivered", "retrying", "dead"}

// KindLabels are the kinds as the status page names them.
var KindLabels = [NumKinds]string{"received", "accepted", "duplicate", "rejected", "merged", "delivered", "failed attempts", "dead"}

// Counts is how many of each Kind happened in one hour.
type Counts [NumKinds]uint64

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	for k := range c {
		c[k] += o[k]
	}
}

// HourCounts are the counts of the hour that starts at Hour (UTC).
type HourCounts struct {
	Hour   time.Time
	Counts Counts
}

// Hour returns the unix hour of t: the key the stores count under.
func Hour(t time.Time) int64 {
	s := t.Unix()
	if s < 0 && s%3600 != 0 {
		return s/3600 - 1
	}
	return s / 3600
}

// HourStart returns the start of unix hour h.
func HourStart(h int64) time.Time { return time.Unix(h*3600, 0).UTC() }

// NameKind is a count the overview's tables keep per source, destination
// or debounced route, per hour, like Kind.
type NameKind uint8

// The counts by name. A store counts each in the commit that does it,
// but for SourceDuplicate, SourceRejected and SourceInvalid (AddNamed).
const (
	SourceAccepted    NameKind = iota // events accepted from the source
	SourceDuplicate                   // requests answered as duplicates
	SourceRejected                    // bad or missing signatures
	SourceInvalid                     // genuine but unusable (no event id)
	DestDelivered                     // attempts that delivered
	DestFailed                        // attempts that failed (to be retried, or dead)
	RouteReceived                     // accepted events that took the debounced route
	RouteMerged                       // merged into a pending delivery
	RouteDeferred                     // held back by the rate limit
	RouteUnkeyed                      // key could not be built: sent at once
	RouteSent                         // pending deliveries that went out
	RouteFiltered                     // events of the route's source and topics its filter turned away
	RouteFilterErrors                 // events whose filter failed (a missing field, a wrong type): turned away
	NumNameKinds                      // the number of kinds by name
)

// Named is a count or a last time of one source, destination or route.
type Named struct {
	Kind NameKind
	Name string
}

// Last is the time (and for a failed attempt, the error) of the latest
// thing of its kind: SourceAccepted (a source's last accepted event),
// DestFailed (a destination's last failed attempt) or DestDelivered (its
// last attempt that delivered).
type Last struct {
	At   time.Time
	Text string
}

// MaxLastText bounds the error a store keeps as a destination's last one.
const MaxLastText = 200

// LastText is err cut to MaxLastText bytes, on a rune boundary.
func LastText(err string) string {
	if len(err) <= MaxLastText {
		return err
	}
	n := MaxLastText
	for n > 0 && !utf8.RuneStart(err[n]) {
		n--
	}
	return err[:n]
}
