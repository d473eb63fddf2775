package app

import (
	"slices"
	"strings"
)

// The words for the state of an event or of a delivery: what the status
// page, the admin API and the command line show, and what the API's
// ?status= filter takes. They are written here once; every place that
// shows or filters a state takes them from here.
const (
	// StatePending is a delivery on its way that has had no attempt yet
	// (or an event whose worst delivery is so).
	StatePending = "pending"
	// StateFailing is a pending delivery that has had an attempt: it
	// failed, and the delivery waits for a retry (see DeliveryWord).
	StateFailing = "failing"
	// StateDelivered is a delivery the destination took.
	StateDelivered = "delivered"
	// StateDead is a delivery that will not be tried again unless replayed.
	StateDead = "dead"
	// StateWaiting is an event of a debounced route whose window is open:
	// no delivery yet, one is due when the window closes.
	StateWaiting = "waiting"
	// StateMerged is an event that debouncing folded into a later one of
	// the same key: that one's delivery carries it.
	StateMerged = "merged"
	// StateUnrouted is an event that no route took.
	StateUnrouted = "unrouted"
	// StateUnreadable is an event whose stored record cannot be decoded.
	StateUnreadable = "unreadable"
)

// EventStates are the words an event's status can be, in the order the
// events page offers them as filters. Each is a value of EventQuery.Status.
var EventStates = []string{StateDelivered, StatePending, StateFailing, StateWaiting, StateDead, StateUnrouted, StateMerged, StateUnreadable}

// DeliveryStates are the words a delivery's state can be.
var DeliveryStates = []string{StatePending, StateFailing, StateDelivered, StateDead}

// CheckEventStatus returns nil when s is "" (all) or one of EventStates,
// else an EINVALID error that names the valid words.
func CheckEventStatus(s string) error {
	if s == "" || slices.Contains(EventStates, s) {
		return nil
	}
	return Errorf(EINVALID, "status %q: use one of %s", s, strings.Join(EventStates, ", "))
}

// The words for the state of a destination, in GET /api/v1/destinations
// (its status, and the ?status= filter) as on the pages, which say
// "paused since", "held until", "failing since" or "ok". StateFailing is
// one of them: its attempts fail.
const (
	// StateOK is a destination whose last attempt worked (or that has had
	// none).
	StateOK = "ok"
	// StateHeld is a destination a Retry-After holds: no attempt starts
	// before it ends.
	StateHeld = "held"
	// StatePaused is a destination paused by hand: nothing is sent to it.
	StatePaused = "paused"
)

// DestinationStates are the words a destination's status can be, worst
// first.
var DestinationStates = []string{StatePaused, StateHeld, StateFailing, StateOK}

// DestinationWord is a destination's status: the first of paused, held
// (by a Retry-After), failing (its last attempt failed) that holds, else
// ok. The page shows each of them that holds; the status is the first.
func DestinationWord(paused, held, failing bool) string {
	switch {
	case paused:
		return StatePaused
	case held:
		return StateHeld
	case failing:
		return StateFailing
	}
	return StateOK
}

// CheckDestinationStatus returns nil when s is "" (all) or one of
// DestinationStates, else an EINVALID error that names the valid words.
func CheckDestinationStatus(s string) error {
	if s == "" || slices.Contains(DestinationStates, s) {
		return nil
	}
	return Errorf(EINVALID, "status %q: use one of %s", s, strings.Join(DestinationStates, ", "))
}
