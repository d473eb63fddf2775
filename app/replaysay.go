// What a replay says it does (issue 44): the deliveries it matched split
// by what it does with each (sent, delivered ones skipped, pending ones
// left alone), in one sentence that the dry run says in the future and
// the run in the past tense. The CLI, the API's "summary" and the replay
// page all print it from the same counts, so they cannot disagree.

package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ReplayCounts splits the deliveries a replay matched by what it does
// with each: the numbers a dry run and its run both report.
type ReplayCounts struct {
	// DeadSent counts the dead ones: sent again.
	DeadSent int
	// DeliveredSent counts the delivered ones a forced replay sends again.
	DeliveredSent int
	// DeliveredSkipped counts the delivered ones an unforced replay
	// skips: the receiver took them once already.
	DeliveredSkipped int
	// PendingLeft counts the pending ones, left as they are: they are on
	// their way already.
	PendingLeft int
	// NotFound counts the deliveries named by id that are not stored.
	NotFound int
	// Changed counts, of those sent (DeadSent, DeliveredSent), the ones a
	// run found in another state when it wrote (replayed by someone
	// else, swept) and left alone.
	Changed int
}

// Add counts one delivery in state s (when matched) under verdict v.
func (c *ReplayCounts) Add(s DeliveryState, v ReplayVerdict) {
	switch {
	case v == ReplayIt && s == Delivered:
		c.DeliveredSent++
	case v == ReplayIt:
		c.DeadSent++
	case v == ReplayRefusedDelivered:
		c.DeliveredSkipped++
	default:
		c.PendingLeft++
	}
}

// Matched is how many deliveries the replay found.
func (c ReplayCounts) Matched() int {
	return c.DeadSent + c.DeliveredSent + c.DeliveredSkipped + c.PendingLeft
}

// Sent is how many it sends again (a run: sent).
func (c ReplayCounts) Sent() int { return c.DeadSent + c.DeliveredSent - c.Changed }

// Say is the counts as one sentence: "6 match: 1 dead will be sent, 5
// delivered skipped (-force sends them too)". done says it in the past
// tense, as the run reports it ("1 dead sent"); force is what sends the
// delivered ones too where the sentence is read ("-force" on the command
// line, `"force": true` in the API, a button on the page).
func (c ReplayCounts) Say(done bool, force string) string {
	n := c.Matched()
	if n == 0 {
		if c.NotFound > 0 {
			return fmt.Sprintf("%d not found", c.NotFound)
		}
		return "nothing matches"
	}
	verb := "will be sent"
	if done {
		verb = "sent"
	}
	parts := []string{c.sent(verb)}
	if k := c.DeliveredSkipped; k > 0 {
		parts = append(parts, fmt.Sprintf("%d delivered skipped (%s sends %s too)", k, force, pick(k, "it", "them")))
	}
	if k := c.PendingLeft; k > 0 {
		parts = append(parts, fmt.Sprintf("%d pending left alone (on %s way already)", k, pick(k, "its", "their")))
	}
	if k := c.Changed; k > 0 {
		parts = append(parts, fmt.Sprintf("%d changed state meanwhile (replayed or swept) and left alone", k))
	}
	if k := c.NotFound; k > 0 {
		parts = append(parts, fmt.Sprintf("%d not found", k))
	}
	return fmt.Sprintf("%d %s: %s", n, pick(n, "matches", "match"), strings.Join(parts, ", "))
}

// sent is the part of Say that counts the ones sent: by state, less the
// ones that changed meanwhile where it knows their state.
func (c ReplayCounts) sent(verb string) string {
	dead, delivered := c.DeadSent, c.DeliveredSent
	switch {
	case c.Changed > 0 && delivered == 0:
		dead -= c.Changed
	case c.Changed > 0 && dead == 0:
		delivered -= c.Changed
	case c.Changed > 0:
		return fmt.Sprintf("%d of %d dead and %d delivered %s", c.Sent(), dead, delivered, verb)
	}
	switch {
	case dead > 0 && delivered > 0:
		return fmt.Sprintf("%d dead and %d delivered %s", dead, delivered, verb)
	case dead > 0:
		return fmt.Sprintf("%d dead %s", dead, verb)
	case delivered > 0:
		return fmt.Sprintf("%d delivered %s", delivered, verb)
	}
	return "none " + verb
}

// pick is one when n is 1, else many.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// ReplayOutcome is what a replay of deliveries named one by one (by id,
// or all of one event's) did with one of them, as the API says it.
type ReplayOutcome string

// The outcomes of a replay on one delivery named by id.
const (
	// ReplaySent: made pending again (a dry run: would be).
	ReplaySent ReplayOutcome = "sent"
	// ReplaySkipped: delivered already and not forced.
	ReplaySkipped ReplayOutcome = "skipped"
	// ReplayLeft: pending, on its way already.
	ReplayLeft ReplayOutcome = "left"
	// ReplayNotFound: no such delivery is stored.
	ReplayNotFound ReplayOutcome = "not_found"
	// ReplayChanged: it was to be sent, and was in another state when
	// written (replayed by someone else, swept): left alone.
	ReplayChanged ReplayOutcome = "changed"
)

// ReplayOne is one delivery of a replay by id, named, with what the
// replay did with it.
type ReplayOne struct {
	ID          uint64
	Destination string
	Event       EventName
	// State is the delivery's state as the replay found it (the state it
	// changed to, for ReplayChanged).
	State   DeliveryState
	Outcome ReplayOutcome
	// Updated is when it last changed: for ReplaySkipped, when it was
	// delivered.
	Updated time.Time
}

// Name is the delivery as the CLI and the pages name it: "#7 pos ←
// shop/wh-1004 orders/create", or "#7" when it is not found.
func (o ReplayOne) Name() string {
	if o.Outcome == ReplayNotFound {
		return "#" + strconv.FormatUint(o.ID, 10)
	}
	return DeliveryName(o.ID, o.Destination, o.Event)
}

// ReplayEach is what a replay of deliveries named one by one did: each
// one's outcome, in the order asked, and the counts Say reads.
type ReplayEach struct {
	Items  []ReplayOne
	Counts ReplayCounts
}

// Add records o and counts it.
func (e *ReplayEach) Add(o ReplayOne) {
	e.Items = append(e.Items, o)
	switch o.Outcome {
	case ReplaySent:
		e.Counts.Add(o.State, ReplayIt)
	case ReplaySkipped:
		e.Counts.DeliveredSkipped++
	case ReplayLeft:
		e.Counts.PendingLeft++
	case ReplayNotFound:
		e.Counts.NotFound++
	case ReplayChanged:
		e.Counts.DeadSent++ // it was dead, or forced: counted where it was meant to go
		e.Counts.Changed++
	}
}
