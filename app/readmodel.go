package app

import (
	"fmt"
	"strings"
	"time"
)

// MaxReplay bounds how many deliveries one replay by query sends again.
const MaxReplay = 100000

// ReplayRunTime bounds a replay by query once it runs: it goes on on the
// server whoever disconnects (a replay half done is worse than one done
// or not begun), for at most this long.
const ReplayRunTime = 10 * time.Minute

// ReplayFirstShown is how many of the matched deliveries a replay by query
// names, for its confirm page and its answer.
const ReplayFirstShown = 10

// ReplayBatch is how many deliveries one write of a replay by query
// changes: 100,000 replays never hold the writer (or a row lock set) for
// long, and each batch's deliveries may go out while the next is written.
const ReplayBatch = 1000

// ReplayQuery selects finished deliveries to send again (POST
// /api/v1/replay, hookbox replay -since …). Every filter is optional; the
// callers ask for at least one (Filtered).
type ReplayQuery struct {
	Source      string
	Topic       string // a glob (see Glob)
	Destination string
	// Delivery, when not 0, selects that delivery alone: a replay of one
	// that is checked in the same write that replays it (a dead one that
	// was replayed and delivered meanwhile is not sent again).
	Delivery uint64
	// Status is "dead", "delivered", or "any" (or ""): either of the two.
	// A pending delivery is never replayed: it is on its way already.
	Status string
	// Since and Until bound the event's received time (inclusive); zero
	// is unbounded.
	Since, Until time.Time
	// Q, when not "", keeps the deliveries of events whose body contains
	// it, as EventQuery.Q does (see Search).
	Q string
	// DryRun counts and names the matches without changing them.
	DryRun bool
	// Limit is how many to replay at most; 0 or more than MaxReplay is
	// MaxReplay.
	Limit int
}

// The statuses a ReplayQuery selects by.
const (
	ReplayDead      = StateDead
	ReplayDelivered = StateDelivered
	ReplayAny       = "any"
)

// Check returns q with its defaults filled in (Status "any", Limit
// MaxReplay), or an error that says what is wrong with it.
func (q ReplayQuery) Check() (ReplayQuery, error) {
	switch q.Status {
	case "":
		q.Status = ReplayAny
	case ReplayDead, ReplayDelivered, ReplayAny:
	default:
		return q, Errorf(EINVALID, "status %q: use dead, delivered or any (pending deliveries are on their way already)", q.Status)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
		return q, Errorf(EINVALID, "until (%s) is before since (%s): nothing can match", q.Until.UTC().Format(time.RFC3339), q.Since.UTC().Format(time.RFC3339))
	}
	if q.Q != "" {
		if err := CheckSearch(q.Q); err != nil {
			return q, err
		}
	}
	if q.Limit <= 0 || q.Limit > MaxReplay {
		q.Limit = MaxReplay
	}
	return q, nil
}

// Filtered reports whether q narrows the deliveries by at least one of
// since, until, source, destination, status or a body search: a replay
// of everything is refused, as it is most likely a mistake.
func (q ReplayQuery) Filtered() bool {
	return !q.Since.IsZero() || !q.Until.IsZero() || q.Source != "" || q.Destination != "" || q.Status != "" || q.Delivery != 0 ||
		q.Q != ""
}

// Wants reports whether q replays a delivery in state s.
func (q ReplayQuery) Wants(s DeliveryState) bool {
	switch s {
	case Dead:
		return q.Status != ReplayDelivered
	case Delivered:
		return q.Status != ReplayDead
	}
	return false
}

// Matches reports whether q selects delivery d of the event named n,
// received at at.
func (q ReplayQuery) Matches(d *Delivery, n EventName, at time.Time) bool {
	return q.Wants(d.State) && q.MatchesEvent(n, at) && (q.Destination == "" || d.Destination == q.Destination) &&
		(q.Delivery == 0 || d.ID == q.Delivery)
}

// Leaves reports whether a replay by q counts delivery d of the event
// named n, received at at, as pending and left alone (it is on its way
// already: ReplayCounts.PendingLeft): d is pending and q's filters select
// it, q's status being "any" (dead or delivered ones asked for alone say
// nothing of pending ones).
func (q ReplayQuery) Leaves(d *Delivery, n EventName, at time.Time) bool {
	return d.State == Pending && q.Status == ReplayAny && q.MatchesEvent(n, at) && (q.Destination == "" || d.Destination == q.Destination) &&
		(q.Delivery == 0 || d.ID == q.Delivery)
}

// MatchesEvent reports whether q's event filters (source, topic, time)
// select the event named n, received at at.
func (q ReplayQuery) MatchesEvent(n EventName, at time.Time) bool {
	return (q.Source == "" || n.Source == q.Source) && (q.Topic == "" || Glob(q.Topic, n.Topic)) &&
		(q.Since.IsZero() || !at.Before(q.Since)) && (q.Until.IsZero() || !at.After(q.Until))
}

// EventName is how a merchant knows an event: its source, its id at the
// source and its topic.
type EventName struct {
	Source string
	ID     string
	Topic  string
}

// ReplayItem is one delivery a replay by query matched, named.
type ReplayItem struct {
	Delivery    uint64
	Destination string
	State       DeliveryState // before the replay
	EventSeq    uint64
	Event       EventName
}

// Name is the delivery as CLI output and pages show it (see DeliveryName).
func (it ReplayItem) Name() string { return DeliveryName(it.Delivery, it.Destination, it.Event) }

// DeliveryName names delivery id to dest of event n the way a merchant
// reads it: "#7 pos ← shop/wh-1004 orders/create". An event that is gone
// (n zero) leaves "#7 pos".
func DeliveryName(id uint64, dest string, n EventName) string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", id, dest)
	if n.Source != "" || n.ID != "" {
		fmt.Fprintf(&b, " ← %s/%s", n.Source, n.ID)
		if n.Topic != "" {
			b.WriteString(" " + n.Topic)
		}
	}
	return b.String()
}
