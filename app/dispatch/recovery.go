package dispatch

import (
	"context"
	"math"
	"time"

	"hookbox/app"
)

// Recovery. A destination that fails is probed, and once it answers again
// the retries waiting for it go out early, paced by its concurrency: after
// an evening's outage its deliveries wait 30 minutes, 2 hours, 8 hours for
// their next step, long after the merchant's app is back.
//
// A destination is failing from its first failed attempt after a success
// until its next success. It looks down (not merely rejecting one payload)
// once two different deliveries failed in a row, or the failures lasted
// ProbeEvery. While it looks down, has no send in flight and nothing due,
// it is probed: one waiting delivery, sent early, at most every ProbeEvery
// after its last attempt (twice as long after each failed probe, up to
// ProbeMax, and never before a Retry-After it sent ends), the waiting
// deliveries taken in turn so that one payload it keeps rejecting does not
// hide that it is back. When a probe or any delivery succeeds after it
// looked down, its waiting deliveries are walked in due order and sent
// early as its slots free, until the walk reaches the end or the
// destination fails again (max(4, Concurrency) early sends in a row). An
// early send that fails is recorded but keeps the delivery's step in its
// schedule and its due time.

// Defaults of Dispatcher.ProbeEvery and ProbeMax: the first probe 30 s
// after the last attempt, then one a minute however long the outage. The
// probes are what finds a destination back, so ProbeMax is how long its
// backlog may wait once it is: a minute (then the walk sends it within
// seconds) is what a merchant can wait for its orders. It was 5 minutes:
// a destination back after a minute's outage waited up to 5 more. One
// probe a minute, one request, costs a destination that is down nothing.
const (
	DefaultProbeEvery = 30 * time.Second
	DefaultProbeMax   = time.Minute
)

// destHealth is what the dispatcher knows of a destination's answers;
// d.mu guards it.
type destHealth struct {
	failingSince time.Time     // the first failed attempt since the last success
	firstFailed  uint64        // the delivery that failed first since then
	others       bool          // another delivery failed since then too
	lastAttempt  time.Time     // when its last recorded attempt ended
	notBefore    time.Time     // the next try stored before a restart: no probe before
	probeWait    time.Duration // from lastAttempt to the next probe
	probing      bool          // a probe is in flight
	probeFrom    position      // the probes go through the waiting deliveries
	walk         *position     // while it recovers: how far the early sends are
	walkFails    int           // early sends that failed in a row
	lastError    string        // what its last failed attempt said
	recoveredAt  time.Time     // when this node last saw an episode end
	shownSince   time.Time     // what was last noted (noteHealth)
	shownNext    time.Time
}

// position is a place in a destination's outbox, in due order.
type position struct {
	due time.Time
	id  uint64
}

// down reports whether the destination looks down at now.
func (h *destHealth) down(now time.Time, every time.Duration) bool {
	return !h.failingSince.IsZero() && (h.others || now.Sub(h.failingSince) >= every)
}

// job is a delivery handed to a sender; an early one goes ahead of its
// schedule (a probe, or a retry taken early while its destination
// recovers).
type job struct {
	w app.Work
	// dest is its lane's destination when it started: a reload that
	// changes the destination changes the sends that start later.
	dest         *app.Destination
	early, probe bool
	// at, when set, is its slot of the destination's rate shared by a
	// cluster: the sender waits for it before it sends.
	at time.Time
}

// healthOf returns what is known of l's destination, made on first use
// with every as the wait before its first probe; d.mu is held.
func (l *lane) healthOf(every time.Duration) *destHealth {
	if l.health == nil {
		l.health = &destHealth{probeWait: every}
	}
	return l.health
}

// heard learns from a finished attempt (recorded or not), and reports
// whether its destination's waiting retries are now to go out early; d.mu
// is held.
func (d *Dispatcher) heard(f finishedAttempt, recorded bool) (walk bool) {
	h := f.lane.healthOf(d.ProbeEvery)
	if f.probe {
		h.probing = false
	}
	if !recorded {
		return false
	}
	a := f.rec.Attempt
	end := a.Start.Add(a.Duration)
	if end.After(h.lastAttempt) {
		h.lastAttempt = end
	}
	if f.rec.State == app.Delivered {
		if !h.failingSince.IsZero() { // the episode ends: stored, and logged once (flushHealth)
			d.noteHealth(f.lane, h, healthNote{view: app.DestinationHealth{RecoveredAt: end}, failedFor: end.Sub(h.failingSince)})
			f.lane.stored.FailingSince, h.recoveredAt = time.Time{}, end
		} else {
			d.endStored(f.lane, h, end)
		}
		if h.down(end, d.ProbeEvery) && h.walk == nil {
			h.walk, walk = &position{}, true
			d.Logger.Debug("destination answers again: its waiting retries go out now", "destination", f.lane.name, "probe", f.probe)
		}
		h.walkFails = 0
		h.failingSince, h.others, h.notBefore, h.lastError = time.Time{}, false, time.Time{}, ""
		h.probeWait, h.probeFrom = d.ProbeEvery, position{}
		return walk
	}
	h.lastError = a.Error
	if h.failingSince.IsZero() {
		// An attempt that began before the success that ended the last
		// episode (another send in flight) fails from that success on.
		h.failingSince, h.firstFailed = later(a.Start, h.recoveredAt).Truncate(time.Microsecond), f.rec.ID
		// The first failure after a success: one line per episode, not one
		// per attempt (the next ones are Debug, in recorded).
		next, nextTry := any("none: the delivery is dead"), time.Time{}
		if f.rec.State == app.Pending {
			next, nextTry = f.rec.Due, f.rec.Due
		}
		attrs := []any{"destination", f.lane.dest.Name}
		if a.Status != 0 { // none when no answer came (a refused connection, a timeout)
			attrs = append(attrs, "status", a.Status)
		}
		d.Logger.Warn("destination failing", append(attrs, "error", a.Error, "event", f.w.Event.ID, "delivery", f.rec.ID, "next_try", next)...)
		d.noteHealth(f.lane, h, healthNote{view: app.DestinationHealth{FailingSince: h.failingSince, LastError: a.Error, NextTry: nextTry}})
	} else if f.rec.ID != h.firstFailed {
		h.others = true
	}
	if f.probe {
		h.probeWait = d.probeBackoff().Next(h.probeWait)
	}
	if f.early && h.walk != nil {
		if h.walkFails++; h.walkFails >= max(4, f.lane.dest.Concurrency) {
			h.walk = nil // down again: probes take over
		}
	}
	return false
}

// probeBackoff is the wait between probes of a destination that looks
// down: ProbeEvery, doubling after each failed probe up to ProbeMax.
func (d *Dispatcher) probeBackoff() app.Backoff {
	return app.Backoff{First: d.ProbeEvery, Max: d.ProbeMax}
}

// beyondDue returns the sends on l beyond what is due, for room free
// slots when nothing else is due (next, from the due read, is zero or
// later than now): early retries while it recovers, or a probe while it
// looks down. at is when to look again for a probe (zero: at the next
// wake-up).
func (d *Dispatcher) beyondDue(ctx context.Context, l *lane, now time.Time, room int, next time.Time, skip func(uint64) bool) (jobs []job, at time.Time) {
	dest := l.dest
	d.mu.Lock()
	h := l.health
	if h == nil || h.failingSince.IsZero() && h.walk == nil && h.shownSince.IsZero() { // healthy
		d.mu.Unlock()
		return nil, time.Time{}
	}
	defer func() { // d.mu is held again by then
		d.show(l, h, now, next, at)
		d.mu.Unlock()
	}()
	if room <= 0 || next.IsZero() || !next.After(now) {
		if next.IsZero() {
			h.walk = nil // nothing waits: the walk is over
		}
		return nil, time.Time{}
	}
	switch {
	case h.walk != nil:
		from := *h.walk
		if !from.due.After(now) {
			from = position{now, math.MaxUint64} // what is due, the due read takes
		}
		d.mu.Unlock()
		ws, err := d.store.WaitingDeliveries(ctx, dest.Name, from.due, from.id, room, skip)
		d.mu.Lock()
		if err != nil || h.walk == nil {
			return nil, time.Time{}
		}
		if len(ws) < room {
			h.walk = nil // at the end
		} else {
			last := ws[len(ws)-1].Delivery
			h.walk = &position{last.Due, last.ID}
			l.backlog, l.backlogged = now, true // a finishing send wakes us for more
		}
		for _, w := range ws {
			jobs = append(jobs, job{w: w, early: true})
		}
		return jobs, time.Time{}
	case h.failingSince.IsZero() || h.probing || l.busy > 0:
		return nil, time.Time{}
	case !h.down(now, d.ProbeEvery):
		return nil, h.failingSince.Add(d.ProbeEvery)
	}
	// A Retry-After holds the lane (passLane): no probe comes before its end.
	at = h.lastAttempt.Add(h.probeWait)
	if h.notBefore.After(at) {
		at = h.notBefore
	}
	if now.Before(at) {
		return nil, at
	}
	from := h.probeFrom
	d.mu.Unlock()
	ws, err := d.store.WaitingDeliveries(ctx, dest.Name, from.due, from.id, 1, skip)
	if err == nil && len(ws) == 0 && !from.due.IsZero() { // the last one: start again
		ws, err = d.store.WaitingDeliveries(ctx, dest.Name, time.Time{}, 0, 1, skip)
	}
	d.mu.Lock()
	if err != nil || len(ws) == 0 || h.probing {
		return nil, time.Time{}
	}
	w := ws[0]
	h.probing, h.probeFrom = true, position{w.Delivery.Due, w.Delivery.ID}
	return []job{{w: w, early: true, probe: true}}, time.Time{}
}

// show notes since when dest fails and when it is tried next (its next
// due retry, or its next probe), when that changed; d.mu is held.
func (d *Dispatcher) show(l *lane, h *destHealth, now, next, probe time.Time) {
	nextTry := time.Time{}
	if !h.failingSince.IsZero() {
		if next.After(now) {
			nextTry = next
		}
		nextTry = earlier(nextTry, probe)
	}
	if h.failingSince.Equal(h.shownSince) && nextTry.Equal(h.shownNext) {
		return
	}
	if h.failingSince.IsZero() {
		h.shownSince, h.shownNext = time.Time{}, time.Time{} // the recovery was noted when heard
		return
	}
	d.noteHealth(l, h, healthNote{view: app.DestinationHealth{FailingSince: h.failingSince, LastError: h.lastError, NextTry: nextTry}})
}
