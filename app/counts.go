package app

import (
	"context"
	"fmt"
	"time"
	"unicode/utf8"
)

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

// CountStore keeps the status page's hourly counts durably, so that a
// restart changes nothing on the page. A store counts what its own writes
// do in the same transaction: an accepted event (received and accepted, in
// the hour it was received, and debounced when it merged into a pending
// delivery) and each recorded attempt (delivered, retrying or dead, in the
// hour the attempt ended). What no write carries (requests refused or
// answered as duplicates) comes through AddCounts.
type CountStore interface {
	// AddCounts adds c to the hour of at. The store keeps them in memory
	// and writes them with a later commit (and at Close): a crash may lose
	// the ones not written yet, never a count of an accepted event or of
	// an attempt.
	AddCounts(at time.Time, c Counts)
	// HourlyCounts returns the counts of the hours from the one of from to
	// the one of to, both included, oldest first; hours with nothing
	// counted may be left out. It includes what AddCounts holds.
	HourlyCounts(ctx context.Context, from, to time.Time) ([]HourCounts, error)

	// AddNamed adds n to the count of (k, name) in the hour of at, held
	// and written as AddCounts does.
	AddNamed(at time.Time, k NameKind, name string, n uint64)
	// NamedCounts sums the counts by name of the hours from the one of
	// from to the one of to, both included, with what AddNamed holds.
	NamedCounts(ctx context.Context, from, to time.Time) (map[Named]uint64, error)
	// Lasts returns the last accepted event of each source and the last
	// failed and last delivering attempt of each destination, as the
	// store's commits wrote them.
	Lasts(ctx context.Context) (map[Named]Last, error)
}

// StatsStore is what Stats needs of the store: the counts it keeps and
// shows, and the figures behind the gauges of /metrics.
type StatsStore interface {
	CountStore
	// CountDead returns the number of dead deliveries.
	CountDead(ctx context.Context) (int, error)
	// CountPending returns the number of deliveries not yet done: due now or
	// later, and debounced ones waiting for their window.
	CountPending(ctx context.Context) (int, error)
	// Poisoned returns up to limit of the records set aside because they
	// could not be decoded, newest first, and how many there are in all.
	Poisoned(ctx context.Context, limit int) ([]Poison, int, error)
}

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

// AttemptError is what a failed attempt keeps as its destination's last
// error: its error, else its HTTP status, cut to MaxLastText.
func AttemptError(a *Attempt) string {
	if a.Error == "" && a.Status != 0 {
		return fmt.Sprintf("HTTP %d", a.Status)
	}
	return LastText(a.Error)
}
