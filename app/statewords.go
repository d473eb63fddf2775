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

// The words for a destination's state: what its row on the Destinations
// page says, worst first.
const (
	// DestPaused is a destination someone paused: nothing is sent to it
	// until it is resumed; its deliveries wait.
	DestPaused = "paused"
	// DestHeld is a destination whose answer asked for a pause
	// (Retry-After): nothing starts before then.
	DestHeld = "held"
	// DestFailing is a destination whose attempts fail: its deliveries
	// wait for a retry (StateFailing, as its deliveries are).
	DestFailing = StateFailing
	// DestDelivering is a destination whose last attempt worked, or that
	// has had none yet.
	DestDelivering = "delivering"
)

// DestinationStates are the words a destination's state can be.
var DestinationStates = []string{DestPaused, DestHeld, DestFailing, DestDelivering}

// DestinationWord is the state of a destination, paused or held by a
// Retry-After (held: its HeldUntil is still ahead), failing when an
// episode of failures is on or its last recorded attempt failed.
func DestinationWord(paused, held, failing bool) string {
	switch {
	case paused:
		return DestPaused
	case held:
		return DestHeld
	case failing:
		return DestFailing
	}
	return DestDelivering
}

// CheckDestinationStatus returns nil when s is "" (all) or one of
// DestinationStates, else an EINVALID error that names the valid words:
// GET /api/v1/destinations?status= lists by them.
func CheckDestinationStatus(s string) error {
	if s == "" || slices.Contains(DestinationStates, s) {
		return nil
	}
	return Errorf(EINVALID, "status %q: use one of %s", s, strings.Join(DestinationStates, ", "))
}
