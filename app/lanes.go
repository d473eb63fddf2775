// A config's destinations as the dispatcher's lanes: NewDispatcher's, and
// each reload's, put in force by the Run goroutine between two passes.

package app

// Apply hands cfg to the dispatcher: its next pass puts it in force
// (putInForce). Sends in flight finish as they started.
func (d *Dispatcher) Apply(cfg *Config) {
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
// Only the Run goroutine (or NewDispatcher, before Run) calls it.
func (d *Dispatcher) putInForce(cfg *Config) {
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
			d.controlsOld.Store(true)
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
