package app

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// ReadModel is what the status page and the admin API read of a store,
// and the replays they start; both stores implement it.
type ReadModel interface {
	// ListEvents returns events matching q, newest first, and the cursor
	// of the next page (0 when there is none).
	ListEvents(ctx context.Context, q EventQuery) ([]EventSummary, uint64, error)
	// SearchEvents is ListEvents for a query with a body search (q.Q, see
	// Search): a store that searches within a budget says in the answer
	// how far it looked. ListEvents given q.Q searches the same way.
	SearchEvents(ctx context.Context, q EventQuery) (EventSearch, error)
	// Event returns the event stored under seq, or nil when there is none.
	Event(ctx context.Context, seq uint64) (*Event, error)
	// EventDeliveries returns the deliveries of event seq.
	EventDeliveries(ctx context.Context, seq uint64) ([]*Delivery, error)
	// Delivery returns a delivery and its attempts.
	Delivery(ctx context.Context, id uint64) (*Delivery, []*Attempt, error)
	// DeadLetters pages through dead deliveries by id and counts them all.
	DeadLetters(ctx context.Context, after uint64, limit int) ([]*Delivery, int, error)
	// MergedInto returns the seqs of the events merged into event seq's
	// delivery by debouncing.
	MergedInto(ctx context.Context, seq uint64) ([]uint64, error)
	// CarriedBy is MergedInto the other way: the event whose delivery
	// carries merged event seq (the one that went out, or while the
	// debounce window is open, the latest event it holds), 0 for none.
	CarriedBy(ctx context.Context, seq uint64) (uint64, error)
	// PreviousInGroup returns the delivery before d in its order group
	// (same destination, route and order key: the highest lower id), nil
	// when d has no order key or is the first of its group: the page says
	// when d went out after a dead one.
	PreviousInGroup(ctx context.Context, d *Delivery) (*Delivery, error)
	// Backlog returns how many deliveries to dest are pending, counting at
	// most limit.
	Backlog(ctx context.Context, dest string, limit int) (int, error)
	// CountDead returns the number of dead deliveries.
	CountDead(ctx context.Context) (int, error)
	// CountPending returns the number of deliveries not yet done.
	CountPending(ctx context.Context) (int, error)
	// CountRetrying returns how many pending deliveries have had an
	// attempt (and wait for a retry), counting at most limit.
	CountRetrying(ctx context.Context, limit int) (int, error)
	// Poisoned returns up to limit of the records set aside because they
	// could not be decoded, newest first, and how many there are in all.
	Poisoned(ctx context.Context, limit int) ([]Poison, int, error)
	// Replay makes a dead or delivered delivery pending again, due at now.
	Replay(ctx context.Context, id uint64, now time.Time) error
	// ReplayDead replays every dead delivery and reports how many.
	ReplayDead(ctx context.Context, now time.Time) (int, error)
	// RetryNow makes the waiting deliveries ids (pending, due after now)
	// due at now, keeping their attempts and tries, and reports how many
	// it moved; one due already or in flight is left as is. It changes
	// nothing when one of ids is unknown (an error wrapping ErrNotFound)
	// or is delivered or dead (an ECONFLICT error: RetryNowVerdict). On a
	// store shared by nodes it tells the others, as an accept does.
	RetryNow(ctx context.Context, ids []uint64, now time.Time) (int, error)
	// RetryDestination makes every waiting delivery to dest due at now,
	// as RetryNow does, and reports how many it moved.
	RetryDestination(ctx context.Context, dest string, now time.Time) (int, error)
	ReplayStore
	// EventNames returns the source, id and topic of the events seqs name
	// (an event that is gone is absent), to name deliveries by them.
	EventNames(ctx context.Context, seqs []uint64) (map[uint64]EventName, error)
}

// ReplayStore is what a replay by query reads and writes of a store: the
// selection itself (SelectReplay) is the domain's, above the stores.
type ReplayStore interface {
	// ReplayCandidates returns the dead or delivered deliveries q (checked
	// by ReplayQuery.Check) matches, at most q.Limit, the first in accept
	// order, named by their events, and whether more matched. A body
	// search (q.Q) reads every body the other filters leave, without
	// SearchEvents' budget (a dry run must select what its run replays),
	// until q.Limit matched or ctx is done.
	ReplayCandidates(ctx context.Context, q ReplayQuery) ([]ReplayItem, bool, error)
	// Requeue makes each delivery of ids that is still in one of the
	// states from pending again, due at now, keeping its attempts, in one
	// write, and reports how many it changed (one gone or in another
	// state is left alone). On a store shared by nodes it tells the
	// others, as an accept does.
	Requeue(ctx context.Context, ids []uint64, from []DeliveryState, now time.Time) (int, error)
	// Delivery and EventNames are ReadModel's: the replay of one delivery
	// reads it, and names it by its event.
	Delivery(ctx context.Context, id uint64) (*Delivery, []*Attempt, error)
	EventNames(ctx context.Context, seqs []uint64) (map[uint64]EventName, error)
}

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
	ReplayDead      = "dead"
	ReplayDelivered = "delivered"
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

// ReplayResult is what a replay by query found and did.
type ReplayResult struct {
	// Matched counts the deliveries selected (at most the query's limit);
	// Delivered is how many of them were delivered (the others dead).
	Matched   int
	Delivered int
	// Selected counts those the run makes pending (a dry run: would):
	// every one matched when forced, else the dead ones, and none when
	// the run is refused (Refused). See SelectReplay.
	Selected int
	// Refused counts the delivered ones an unforced replay refuses; when
	// not 0 the run refuses as a whole, and Refusal says why and what to
	// do.
	Refused int
	Refusal string
	// Replayed counts those made pending (0 for a dry run; fewer than
	// Selected when some changed state meanwhile).
	Replayed int
	// More says that more deliveries matched than the limit allowed.
	More bool
	// First names the first ReplayFirstShown matched, in accept order.
	First []ReplayItem
}

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
