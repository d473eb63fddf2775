// The dispatcher's side of the destinations' controls: the pauses and
// Retry-After holds it reads from the store (every ControlEvery, and at
// once after ControlsChanged) and the holds it stores, and the pace of a
// destination's rate (app.Rate), shared by a cluster through an
// app.RateStore.

package dispatch

import (
	"context"
	"sync/atomic"
	"time"

	"hookbox/app"
)

// controlState is what the dispatcher knows of its reads of the
// controls, and the holds it has to store.
type controlState struct {
	read  time.Time   // the last read; the Run goroutine's
	stale atomic.Bool // ControlsChanged was called since the last read
	log   app.Throttle
	// holds are the Retry-After holds heard since the last batch was
	// recorded, to be stored; d.mu guards them.
	holds []laneHold
}

// pacer spaces a lane's starts by its rate; d.mu guards it.
type pacer struct {
	spacing time.Duration
	next    time.Time // the earliest start of the next attempt
}

// paceAhead is how much of a rate's time one pass fills: it starts up to
// paceAhead's worth of attempts, each given its slot (job.at), for which
// its sender waits; the starts stay evenly spaced, and a pass (a read of
// the outbox, and on PostgreSQL a reservation) serves several of them.
// A pass may come paceLead before the next slot, so that its own time is
// not added to the spacing.
const (
	paceAhead = 100 * time.Millisecond
	paceLead  = paceAhead / 2
)

// allow returns how many of want attempts a pass at now may start (0:
// none before the returned time).
func (p *pacer) allow(now time.Time, want int) (int, time.Time) {
	if p.spacing <= 0 {
		return want, time.Time{}
	}
	if p.next.After(now.Add(paceLead)) {
		return 0, p.next.Add(-paceLead)
	}
	n := 1 + int(paceAhead/p.spacing)
	return min(n, want), time.Time{}
}

// DefaultControlEvery is Dispatcher.ControlEvery's default.
const DefaultControlEvery = 250 * time.Millisecond

// laneHold is a Retry-After hold of a lane, to be stored.
type laneHold struct {
	lane  *lane
	until time.Time
}

// ControlsChanged tells the dispatcher that a destination was paused or
// resumed through this node: it reads the controls at its next pass.
func (d *Dispatcher) ControlsChanged() {
	d.ctl.stale.Store(true)
	d.Wake()
}

// readControls reads the stored controls into the lanes when the last read
// is ControlEvery old or ControlsChanged was called, and returns when to
// read again while a lane is paused (zero: none is). A failed read keeps
// what the last one said. Only the Run goroutine calls it.
func (d *Dispatcher) readControls(ctx context.Context, now time.Time) (poll time.Time) {
	if d.Controls == nil {
		return time.Time{}
	}
	changed := d.ctl.stale.Swap(false)
	if changed || d.ctl.read.IsZero() || now.Sub(d.ctl.read) >= d.ControlEvery || now.Before(d.ctl.read) {
		d.ctl.read = now
		cs, err := d.Controls.DestinationControls(ctx)
		if err != nil {
			if ok, held := d.ctl.log.Allow(now, time.Minute); ok {
				d.Logger.Warn("read the destinations' pauses: the last ones read stay in force", "error", err, "also_failed", held)
			}
		} else {
			d.mu.Lock()
			for _, l := range d.lanes {
				c := cs[l.dest.Name]
				switch {
				case c.Paused && !l.paused:
					d.Logger.Info("destination paused: its deliveries wait", "destination", l.dest.Name, "by", c.PausedBy)
				case !c.Paused && l.paused:
					d.Logger.Info("destination resumed: its deliveries go out", "destination", l.dest.Name)
				}
				l.paused = c.Paused
				if c.HeldUntil.After(l.held) {
					l.held = c.HeldUntil
				}
				d.adoptHealth(l, c.Health)
			}
			d.mu.Unlock()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.lanes {
		if l.paused {
			return d.ctl.read.Add(d.ControlEvery)
		}
	}
	return time.Time{}
}

// storeHolds stores the Retry-After holds heard, so that every node holds
// the destination; a hold that cannot be stored still holds this node.
func (d *Dispatcher) storeHolds(holds []laneHold) {
	if d.Controls == nil {
		return
	}
	for _, h := range holds {
		if err := d.Controls.HoldDestination(context.Background(), h.lane.name, h.until); err != nil {
			d.Logger.Warn("store a destination's Retry-After hold: only this node holds it", "destination", h.lane.name, "error", err)
		}
	}
}

// paceJobs gives each of jobs, about to start on l at now, its slot of l's
// rate, and returns l's next free slot (zero: l has no rate). Without
// Rates the slots are this node's (one node: bbolt); with it,
// they are reserved for the cluster, so nodes together keep the rate.
// A job whose slot is later than now waits for it in its sender.
func (d *Dispatcher) paceJobs(ctx context.Context, l *lane, now time.Time, jobs []job) time.Time {
	sp := l.pace.spacing
	if sp <= 0 {
		return time.Time{}
	}
	d.mu.Lock()
	base := later(l.pace.next, now)
	d.mu.Unlock()
	if len(jobs) == 0 {
		return base
	}
	if d.Rates != nil {
		first, storeNow, err := d.Rates.ReserveStarts(ctx, l.dest.Name, len(jobs), sp)
		if err == nil {
			base = later(now.Add(first.Sub(storeNow)), now) // by this node's clock
		} else if ok, held := d.ctl.log.Allow(now, time.Minute); ok {
			d.Logger.Warn("reserve starts of a destination's rate: this node paces alone", "destination", l.dest.Name, "error", err, "also_failed", held)
		}
	}
	for i := range jobs {
		if at := base.Add(time.Duration(i) * sp); at.After(now) {
			jobs[i].at = at
		}
	}
	d.mu.Lock()
	l.pace.next = base.Add(time.Duration(len(jobs)) * sp)
	next := l.pace.next
	d.mu.Unlock()
	return next
}

// waitSlot waits until at (a job's slot of its rate), or until Run stops.
func (d *Dispatcher) waitSlot(at time.Time) {
	wait := at.Sub(d.Now())
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-d.run.stop:
	}
}
