// A config's destinations as the dispatcher's lanes: New's, and
// each reload's, put in force by the Run goroutine between two passes.

package dispatch

import (
	"time"

	"hookbox/app"
)

// Apply hands cfg to the dispatcher: its next pass puts it in force
// (putInForce). Sends in flight finish as they started.
func (d *Dispatcher) Apply(cfg *app.Config) {
	d.next.Store(cfg)
	d.Wake()
}

// putInForce makes the lanes cfg's destinations, in its order. A
// destination kept by name keeps its lane (its sends in flight, health,
// pause, hold and pace) with the new settings; one whose concurrency
// changed gets new senders, while the old ones finish what they hold. A
// new destination gets a lane; a removed one's lane takes no new work
// and its senders end after their sends in flight: its waiting
// deliveries stay in the outbox, unread until a config names it again.
// Only the Run goroutine (or New, before Run) calls it.
func (d *Dispatcher) putInForce(cfg *app.Config) {
	old := make(map[string]*lane, len(d.lanes))
	for _, l := range d.lanes {
		old[l.name] = l
	}
	lanes := make([]*lane, 0, len(cfg.Destinations))
	d.mu.Lock()
	for _, dest := range cfg.Destinations {
		l := old[dest.Name]
		if l == nil {
			lanes = append(lanes, &lane{name: dest.Name, dest: dest, pace: pacer{spacing: dest.Rate.Spacing()}})
			// Its stored pause or hold (one from before it was removed, or
			// another node's) is read before it sends: this pass reads the
			// controls.
			d.ctl.stale.Store(true)
			continue
		}
		delete(old, dest.Name)
		if l.queue != nil && dest.Concurrency != l.dest.Concurrency {
			close(l.queue) // its senders finish the jobs queued, then end
			l.queue = nil  // the next start makes senders for the new concurrency
		}
		l.dest, l.pace.spacing = dest, dest.Rate.Spacing()
		lanes = append(lanes, l)
	}
	d.mu.Unlock()
	for _, l := range old { // removed
		if l.queue != nil {
			close(l.queue)
			l.queue = nil
		}
	}
	d.lanes = lanes
	t := newSendTransforms(cfg)
	d.transforms.Store(&t)
}

// lane is one destination's part of the dispatcher. d.mu guards its
// fields but queue, which only the Run goroutine touches; dest changes
// only in the Run goroutine, under d.mu (lanes.go), and a send takes the
// one its job was started with.
type lane struct {
	name string
	dest *app.Destination
	// paused says an operator paused it: no send starts. held is the end
	// of its last Retry-After (its own, or one another node stored): no
	// send starts before.
	paused bool
	held   time.Time
	// pace spaces its starts by its rate.
	pace pacer
	// queue feeds the lane's Concurrency long-lived senders, started on
	// its first delivery: a goroutine per send cost its start and the
	// growth of its stack every time. nil until then, and after Run.
	queue chan job
	busy  int // sends in progress
	// backlogged says its last read left due work behind, at backlog:
	// a finishing send then wakes the dispatcher (see pass).
	backlogged bool
	backlog    time.Time
	// health is what is known of its destination's answers (recovery.go),
	// nil until its first attempt ended. stored is its health as the
	// store had it at the last read of the controls (healthnote.go).
	health *destHealth
	stored app.DestinationHealth
}

// finishedAttempt is an attempt waiting to be recorded.
type finishedAttempt struct {
	lane         *lane
	w            app.Work
	rec          app.AttemptRecord
	early, probe bool
	// unsent says nothing was sent (the route's transform failed): the
	// destination's health learns nothing from it.
	unsent bool
}
