package app

import (
	"time"
)

// DeliveryState is where a delivery stands.
type DeliveryState uint8

// The states of a delivery. A pending delivery has a due time in the outbox.
const (
	Pending   DeliveryState = 1
	Delivered DeliveryState = 2
	Dead      DeliveryState = 3
)

// String names the stored state (see DeliveryWord for the word the
// page shows, which tells a failing delivery from a pending one).
func (s DeliveryState) String() string {
	switch s {
	case Pending:
		return StatePending
	case Delivered:
		return StateDelivered
	case Dead:
		return StateDead
	}
	return "unknown"
}

// Delivery is one event on its way to one destination. Its ID is stable
// across retries and replays.
type Delivery struct {
	ID          uint64
	EventSeq    uint64
	Destination string
	// Route is the route the delivery was opened for ("" for one opened
	// before routes were recorded): its transform makes the body sent.
	Route string
	// OrderKey is its order group on that route ("": none): deliveries of
	// a group go to the destination one at a time, in id order.
	OrderKey   string
	State      DeliveryState
	Attempts   int       // all attempts ever
	Tries      int       // attempts since it was opened or last replayed: the step in the retry schedule
	Due        time.Time // next attempt, for a pending delivery
	Created    time.Time
	Updated    time.Time
	LastStatus int    // HTTP status of the last attempt, 0 if none answered
	LastError  string // short error of the last failed attempt
}

// Attempt is the record of one try to deliver.
type Attempt struct {
	N        int
	Start    time.Time
	Duration time.Duration
	Status   int    // 0 when no HTTP answer came
	Error    string // empty on success
	Response []byte // the first MaxResponseSnippet bytes of the answer's body
	// Probe marks an attempt sent early to learn whether a failing
	// destination is back (recovery.go): recorded like any other, it uses
	// no step of the retry schedule and carries the number of the step it
	// went ahead of (AttemptNumber).
	Probe bool
}

// AttemptRecord is one attempt to record with Store.RecordAttempts: the
// attempt of delivery ID and the state (due at Due when Pending) it leads to.
type AttemptRecord struct {
	ID      uint64
	Attempt *Attempt
	State   DeliveryState
	Due     time.Time
	// Early marks a try ahead of the delivery's schedule (a probe of a
	// failing destination, or a retry taken early once it answers again):
	// it does not use a step of the retry schedule.
	Early bool
}

// MaxResponseSnippet bounds the response body kept per attempt.
const MaxResponseSnippet = 1024

// DeliveryWord is the word for d's state: its stored state, except that a
// pending delivery that has had an attempt is "failing" (every attempt that
// leaves a delivery pending failed). The stores filter by this same rule
// (storetest's EventStateWords holds them to it).
func DeliveryWord(d *Delivery) string {
	if d.State == Pending && d.Attempts > 0 {
		return StateFailing
	}
	return d.State.String()
}

// deliveryRank orders the words of deliveries from best to worst: an
// event's status is the worst of its deliveries'.
var deliveryRank = map[string]int{StateDelivered: 1, StatePending: 2, StateFailing: 3, StateDead: 4}

// EventWord is an event's status from its deliveries: the worst of their
// words, dead before failing before pending before delivered; "" when it
// has none (the store then says waiting, merged or unrouted).
func EventWord(ds []*Delivery) string {
	worst := ""
	for _, d := range ds {
		if w := DeliveryWord(d); deliveryRank[w] > deliveryRank[worst] {
			worst = w
		}
	}
	return worst
}
