package app

import "time"

// Plan says where an accepted event goes: deliveries opened at once, and
// per-entity pending deliveries of debounced routes.
type Plan struct {
	Direct   []Direct
	Debounce []*DebounceOp
	// Unkeyed names the debounced routes whose key could not be built:
	// their destinations are in Direct; the store counts them per route.
	Unkeyed []string
	// Filtered names the routes of the event's source and topic that their
	// filter turned away (false, or an error): the store counts them per
	// route (CountDelta.Routed).
	Filtered []FilterNote
}

// Empty reports whether the plan sends the event nowhere (unrouted).
func (p *Plan) Empty() bool { return p == nil || len(p.Direct) == 0 && len(p.Debounce) == 0 }

// DebounceOp is one debounced route's part of a plan: the entity key the
// event belongs to, the route's rules, and what became of it (set by the
// store as it applies the event: see DebounceResult).
type DebounceOp struct {
	Route  string
	Key    string
	Delay  time.Duration // the debounce window
	Limit  int           // sends per Window; 0 means no rate limit
	Window time.Duration
	To     []string
	// OrderKey is the route's order group of the event ("": none): the
	// pending delivery, once fired, keeps the place of the event that
	// opened it.
	OrderKey string

	Result DebounceResult
}

// DebounceResult is what the store did with a DebounceOp when it applied
// the event: within Accept on PostgreSQL; on bbolt right behind the
// answer (its intake log), before any read that follows.
type DebounceResult uint8

// The results of a DebounceOp, in the order they are checked.
const (
	// Merged: the key had a pending delivery; the event replaced its body.
	Merged DebounceResult = iota + 1
	// Deferred: the key used its rate limit; a pending delivery opened for
	// when the window frees a slot.
	Deferred
	// Opened: a pending delivery opened, due after the debounce window.
	Opened
)

// MaxMergedKept bounds the merged event seqs a pending delivery records:
// both stores keep at most this many.
const MaxMergedKept = 100

// KeepMerged is merged with replaced, the event a merge replaced, added
// while fewer than MaxMergedKept are kept (seqs as each store holds them).
func KeepMerged[S ~[]E, E any](merged S, replaced E) S {
	if len(merged) < MaxMergedKept {
		merged = append(merged, replaced)
	}
	return merged
}

// DebounceDecision is what DecideDebounce says to do with one event on a
// debounced route.
type DebounceDecision struct {
	// Result is Merged (the key's pending delivery takes the event),
	// Deferred or Opened (a pending delivery opens, due at Due).
	Result DebounceResult
	Due    time.Time
	// Sends are the key's sends in the rate-limit window after the
	// decision, oldest first: those still in the window at now, and now
	// when the event took a slot. The store saves them when Limited.
	Sends   []time.Time
	Limited bool // the route has a rate limit: Sends is the window to save
}

// DecideDebounce is the debounce decision, made once for both stores, in
// the order the design fixes: an event whose key has a pending delivery
// merges into it; else, when the key used its rate limit (op.Limit sends
// in the sliding op.Window before now), a pending delivery opens deferred
// until the oldest of those sends leaves the window; else the event takes
// a slot and a pending delivery opens due after the debounce delay.
// pending says whether the key has a pending delivery; sends are the
// key's recorded sends, oldest first (the store loads both in its
// transaction and saves what the decision says).
func DecideDebounce(op *DebounceOp, pending bool, sends []time.Time, now time.Time) DebounceDecision {
	if pending {
		return DebounceDecision{Result: Merged}
	}
	d := DebounceDecision{Result: Opened, Due: now.Add(op.Delay)}
	if op.Limit <= 0 {
		return d
	}
	d.Limited = true
	d.Sends = PruneSends(sends, op.Window, now)
	if len(d.Sends) >= op.Limit {
		d.Result, d.Due = Deferred, d.Sends[len(d.Sends)-op.Limit].Add(op.Window)
		return d
	}
	d.Sends = append(d.Sends, now)
	return d
}

// PruneSends drops the sends that left a sliding window of length window
// by now: a send exactly window before now has left it.
func PruneSends(sends []time.Time, window time.Duration, now time.Time) []time.Time {
	i := 0
	for i < len(sends) && !sends[i].After(now.Add(-window)) {
		i++
	}
	return sends[i:]
}

// TakeSlot is the window after a deferred pending delivery fires at now:
// its send takes a slot then, not when it was deferred.
func TakeSlot(sends []time.Time, window time.Duration, now time.Time) []time.Time {
	return append(PruneSends(sends, window, now), now)
}
