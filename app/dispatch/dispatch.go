package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hookbox/app"
)

// Dispatcher takes pending deliveries out of the outbox and hands them to
// its Sender, each destination in its own lane with its own concurrency
// limit so a slow one never holds back the others. It wakes when a commit
// adds work, when a send ends while its destination has work waiting, and
// on a timer for the next due time (at most every readWait while work
// waits for slots); it never polls an idle outbox.
//
// Read top to bottom, in this file: Run wakes and calls dispatch, which
// makes a pass over each lane (passLane); start hands a delivery to one
// of the lane's senders, send makes the attempt and decides its outcome
// by the attempt rule (app.DecideAttempt), and record (record.go) writes
// finished attempts in batches (recorded ends their leases). The lanes
// of a config are in lanes.go; what a lane learns of its destination's
// answers, and the probes and early retries that follow, in recovery.go;
// the health it notes in healthnote.go; a lane's pause, Retry-After hold
// and rate in control.go.
type Dispatcher struct {
	Options
	store  app.Outbox
	sender app.Sender
	// lanes are the destinations' lanes in the config's order; only the
	// Run goroutine reads or changes the list (lanes.go).
	lanes []*lane
	// next is the config Apply handed over, for the next pass to put in force.
	next atomic.Pointer[app.Config]
	// transforms make the bodies of the routes that have a transform;
	// swapped whole when a config is put in force.
	transforms atomic.Pointer[sendTransforms]
	wake       chan struct{}
	mu         sync.Mutex
	leases     leases // d.mu guards them
	sends      sync.WaitGroup
	run        runState
	ctl        controlState
	notes      healthNotes
	signals    signals
}

// Options are what the caller may set before Run; New sets the defaults.
type Options struct {
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger
	// Stats, when set, counts attempts for the status page and metrics.
	Stats *app.Stats
	// StoreRetry is how long a delivery whose attempt could not be recorded
	// (a full disk) waits before it goes out again, so the destination is
	// not hammered meanwhile; it doubles each time in a row, up to
	// StoreRetryMax.
	StoreRetry, StoreRetryMax time.Duration
	// ProbeEvery is the least time between two probes of a failing
	// destination; it doubles after each failed probe up to ProbeMax.
	ProbeEvery, ProbeMax time.Duration
	// Controls, when set, holds the destinations' pauses and Retry-After
	// holds (control.go); the dispatcher reads them at most every
	// ControlEvery, and at once after ControlsChanged.
	Controls app.ControlStore
	// Rates, when set, reserves the starts of a destination with a rate
	// for every node that shares the store (PostgreSQL); nil: this node
	// paces alone (bbolt, one node).
	Rates app.RateStore
	// ControlEvery is the longest a node goes without reading Controls
	// while it sends, or while a destination is paused (so that a resume
	// through another node is seen).
	ControlEvery time.Duration
	// Health, when set, keeps the destinations' health (healthnote.go):
	// read at start, written when it changes.
	Health app.HealthStore
}

// leases are the dispatcher's per delivery state, whatever its lane.
type leases struct {
	inflight map[uint64]bool // deliveries being sent: the in-memory lease
	// A pass reads the outbox in a read transaction: one that began before
	// a send's attempt was recorded still shows that delivery due after its
	// lease is gone. finished keeps the pass number current when each lease
	// ended (its attempt recorded, or its wait after a failed record), and
	// a pass skips what ended after it began.
	pass     uint64
	finished map[uint64]uint64
	// unrecorded counts, per delivery, the attempts in a row whose outcome
	// could not be recorded: each waits twice as long as the one before.
	unrecorded map[uint64]int
}

// runState is what one Run sets up for its senders.
type runState struct {
	// stopping is set once Run's context is done: no send starts then.
	stopping atomic.Bool
	// stop is closed when Run's ctx is done: a send waiting for its slot
	// of the rate gives up then.
	stop    chan struct{}
	senders *sync.WaitGroup // the senders of the current Run
	// Senders hand finished attempts to the recorder and take the next
	// delivery at once: a destination's concurrency counts requests in
	// flight, not requests waiting for their attempt's fsync. The lease
	// stays until the attempt is recorded.
	records chan finishedAttempt
}

// signals are what tests wait on.
type signals struct {
	// onRecorded, when set before Run, is called after each batch of
	// attempts was written (or failed to be).
	onRecorded func()
	// onPass, when set, is told each finished pass with the clock's time
	// just before it began.
	onPass atomic.Pointer[func(began time.Time)]
}

// storageWait is how long the dispatcher waits while commits fail before
// it looks again (StorageHealth wakes it sooner when they work again).
const storageWait = time.Second

// storage is where d reports a read or write the store refused: nil
// without Stats (tests), whose methods then log every failure.
func (d *Dispatcher) storage() *app.StorageHealth {
	if d.Stats == nil {
		return nil
	}
	return d.Stats.Storage
}

// readWait is the longest a destination with work waiting goes without a
// read of the outbox while some of its slots are free.
const readWait = time.Millisecond

// maxRecordBatch bounds how many attempts share one write.
const maxRecordBatch = 1024

// New builds the dispatcher for cfg's destinations over store, sending
// with sender.
func New(cfg *app.Config, store app.Outbox, sender app.Sender) *Dispatcher {
	d := &Dispatcher{
		Options: Options{
			Now:           time.Now,
			Logger:        slog.With("component", "dispatch"),
			StoreRetry:    5 * time.Second,
			StoreRetryMax: 5 * time.Minute,
			ProbeEvery:    DefaultProbeEvery,
			ProbeMax:      DefaultProbeMax,
			ControlEvery:  DefaultControlEvery,
		},
		store:  store,
		sender: sender,
		wake:   make(chan struct{}, 1),
		leases: leases{inflight: map[uint64]bool{}, finished: map[uint64]uint64{}, unrecorded: map[uint64]int{}},
	}
	d.putInForce(cfg)
	return d
}

// Wake tells the dispatcher that new work may be due. It never blocks.
func (d *Dispatcher) Wake() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run dispatches until ctx is done. Sends in progress then go on under
// sendCtx; Wait waits for them.
func (d *Dispatcher) Run(ctx, sendCtx context.Context) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// Once ctx is done no send starts and dials in progress are cut: they
	// have sent nothing yet, and a connect that hangs would hold the stop
	// for the destination's timeout. Once sendCtx is done, the sends in
	// flight are cut, and their connections closed (after Run has
	// returned, as sends go on under sendCtx).
	stop := make(chan struct{})
	d.run.stop = stop
	context.AfterFunc(ctx, func() {
		close(stop)
		d.run.stopping.Store(true)
		d.sender.Stop()
	})
	context.AfterFunc(sendCtx, d.sender.Close)
	records := make(chan finishedAttempt, maxRecordBatch)
	senders := &sync.WaitGroup{}
	d.run.records, d.run.senders = records, senders
	go d.record(records)
	d.loadHealth(ctx, d.Now())
	// What the last passes noted is stored once the senders are released.
	defer d.flushHealth()
	defer func() { // the senders finish what they hold, then return
		for _, l := range d.lanes {
			if l.queue != nil {
				close(l.queue)
				l.queue = nil
			}
		}
		go func() { // the recorder records what they finished, then returns
			senders.Wait()
			close(records)
		}()
	}()
	for {
		began := d.Now()
		next := d.dispatch(sendCtx)
		if f := d.signals.onPass.Load(); f != nil {
			(*f)(began)
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = max(next.Sub(d.Now()), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-timer.C:
		}
	}
}

// Wait blocks until every send in progress has finished and its attempt
// is recorded (or could not be).
func (d *Dispatcher) Wait() { d.sends.Wait() }

// dispatch starts sends for what is due, as far as each destination has
// free slots, and returns the earliest due time it did not start.
func (d *Dispatcher) dispatch(ctx context.Context) time.Time {
	d.mu.Lock()
	d.leases.pass++
	pass := d.leases.pass
	for id, p := range d.leases.finished {
		if p < pass { // ended before this pass began: its reads see the record
			delete(d.leases.finished, id)
		}
	}
	d.mu.Unlock()
	if cfg := d.next.Swap(nil); cfg != nil {
		d.putInForce(cfg)
	}
	skip := func(id uint64) bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		p, ended := d.leases.finished[id]
		return d.leases.inflight[id] || ended && p >= pass
	}
	now := d.Now()
	if d.storage().Failing() {
		// Nothing goes out while commits fail: an outcome that cannot be
		// recorded means the same send again later. The deliveries wait in
		// the outbox; StorageHealth wakes us when commits work again.
		return now.Add(storageWait)
	}
	_, earliest, err := d.store.FirePending(ctx, now)
	if err != nil {
		d.storage().Failure(d.Logger, "fire pending deliveries", err)
		earliest = now.Add(5 * time.Second)
	}
	earliest = earlier(earliest, d.readControls(ctx, now))
	for _, l := range d.lanes {
		earliest = earlier(earliest, d.passLane(ctx, l, now, skip))
	}
	d.flushHealth() // rarely anything: a next try changed
	return earliest
}

// passLane starts sends on l for what is due, as far as it has free
// slots, and returns the earliest due time it did not start (zero: none).
func (d *Dispatcher) passLane(ctx context.Context, l *lane, now time.Time, skip func(uint64) bool) (earliest time.Time) {
	dest := l.dest
	d.mu.Lock()
	if l.paused {
		d.mu.Unlock()
		return time.Time{} // readControls looks again for a resume
	}
	if l.held.After(now) {
		held := l.held
		d.mu.Unlock()
		return held
	}
	free := dest.Concurrency - l.busy
	at, backlogged := l.backlog, l.backlogged
	if !backlogged {
		// From here on a finishing send wakes us: its slot may be
		// wanted by work this pass does not read (no slot is free) or
		// reads too late (it ends during the read). Set in the same
		// lock as free is read, so no ending send falls in between.
		l.backlog, l.backlogged = now, true
	}
	d.mu.Unlock()
	if free <= 0 {
		return time.Time{}
	}
	// With more due than slots, wait for a quarter of the slots (or
	// readWait) before reading again: a read scans past every delivery
	// in flight, and reading for each slot as it freed cost more than
	// the sends (87 keys scanned per delivery at 64 slots).
	if backlogged && free < max(1, dest.Concurrency/4) && now.Sub(at) < readWait {
		return at.Add(readWait)
	}
	d.mu.Lock()
	free, slot := l.pace.allow(now, free)
	d.mu.Unlock()
	if free == 0 {
		return slot // its next slot of the rate
	}
	work, next, err := d.store.DueDeliveries(ctx, dest.Name, now, free, skip)
	if err != nil {
		d.storage().Failure(d.Logger, "read outbox", err, "destination", dest.Name)
		next = now.Add(5 * time.Second) // try again soon, not in a loop
	}
	d.mu.Lock()
	if len(work) == free && !next.IsZero() && !next.After(now) {
		l.backlog, l.backlogged = now, true // work left behind
	} else {
		l.backlogged = false // new work wakes us when committed
	}
	d.mu.Unlock()
	earliest = next
	jobs := make([]job, 0, len(work))
	for _, w := range work {
		jobs = append(jobs, job{w: w})
	}
	if err == nil {
		more, at := d.beyondDue(ctx, l, now, free-len(work), next, skip)
		jobs = append(jobs, more...)
		earliest = earlier(earliest, at)
	}
	if slot := d.paceJobs(ctx, l, now, jobs); !slot.IsZero() && !earliest.IsZero() {
		earliest = later(earliest, slot) // more waits: at its next slot
	}
	for _, j := range jobs {
		d.start(ctx, l, j)
	}
	return earliest
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// start leases j's delivery and hands it to one of l's senders.
func (d *Dispatcher) start(ctx context.Context, l *lane, j job) {
	d.mu.Lock()
	d.leases.inflight[j.w.Delivery.ID] = true
	l.busy++
	j.dest = l.dest
	d.mu.Unlock()
	d.sends.Add(1)
	d.queue(ctx, l) <- j // never blocks: busy stays within Concurrency
}

// earlier returns the earlier of a and b, a zero time meaning none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// queue returns l's work queue, starting its senders on first use.
// Only the Run goroutine calls it.
func (d *Dispatcher) queue(ctx context.Context, l *lane) chan job {
	q := l.queue
	if q == nil {
		n := l.dest.Concurrency
		q = make(chan job, n)
		l.queue = q
		records, senders := d.run.records, d.run.senders
		senders.Add(n)
		for range n {
			go func() {
				defer senders.Done()
				for j := range q {
					d.send(ctx, l, j, records)
				}
			}()
		}
	}
	return q
}

// release ends the lease of delivery id; d.mu is held.
func (d *Dispatcher) release(id uint64) {
	delete(d.leases.inflight, id)
	d.leases.finished[id] = d.leases.pass
}

// send makes one attempt and hands it to the recorder, which ends the
// lease. An attempt cut short by shutdown is not recorded, nor one that
// had not connected when the stop began, nor one the stop kept from
// starting: the delivery stays due and goes out after the restart. When
// the delivery's route has a transform, the attempt sends the body it
// makes now; when it fails, nothing is sent and the delivery is dead at
// once with the reason (the same event through the same transform fails
// the same way at every retry), to be replayed once the config is fixed.
func (d *Dispatcher) send(ctx context.Context, l *lane, j job, records chan<- finishedAttempt) {
	w, dest := j.w, j.dest
	if !j.at.IsZero() {
		d.waitSlot(j.at)
	}
	if d.heldNow(l) {
		// Taken before its destination was held (a Retry-After heard while
		// it waited in the queue, or for its slot of the rate): it goes
		// back unsent, and out once the hold ends.
		d.unsent(l, j)
		return
	}
	a := &app.Attempt{Start: d.Now(), Probe: j.probe}
	var res app.Answer
	var failed error // the transform's
	if !d.run.stopping.Load() {
		req := app.SendRequest{Dest: dest, Work: w, Attempt: app.AttemptNumber(w.Delivery), Now: d.Now()}
		if req.Transformed, failed = d.transforms.Load().of(w); failed == nil {
			res = d.sender.Send(ctx, req)
		} else {
			res.Err = failed
		}
	}
	a.Duration = d.Now().Sub(a.Start)
	if failed == nil && (ctx.Err() != nil || d.run.stopping.Load() && !res.Answered) {
		d.unsent(l, j)
		return
	}
	a.Status, a.Response = res.Status, res.Snippet
	if res.Err != nil {
		a.Error = res.Err.Error()
	}
	o := app.DecideAttempt(dest, w.Delivery, res, a.Start.Add(a.Duration), j.early)
	if failed != nil {
		o.State, o.Due = app.Dead, time.Time{}
	}
	if o.State != app.Delivered && a.Error == "" {
		a.Error = fmt.Sprintf("HTTP %d", res.Status)
	}
	if res.Note != "" { // the status stands; the record says the answer was cut
		a.Error = strings.TrimPrefix(a.Error+"; "+res.Note, "; ")
	}
	if !o.HeldUntil.IsZero() {
		// The hold is in force before this send's slot frees: the next
		// pass, and every send already taken, sees it (heldNow).
		d.mu.Lock()
		if o.HeldUntil.After(l.held) {
			l.held = o.HeldUntil // the whole destination waits, not only this delivery
			d.ctl.holds = append(d.ctl.holds, laneHold{l, o.HeldUntil})
		}
		d.mu.Unlock()
	}
	// Waits only when the recorder is a whole batch behind, which holds
	// the senders back while the disk is slower than the destinations.
	records <- finishedAttempt{lane: l, w: w, rec: app.AttemptRecord{ID: w.Delivery.ID, Attempt: a, State: o.State, Due: o.Due, Early: j.early},
		early: j.early, probe: j.probe, unsent: failed != nil}
	d.mu.Lock()
	l.busy--
	backlogged := l.backlogged
	d.mu.Unlock()
	if backlogged { // else new work wakes us when it is committed
		d.Wake()
	}
}

// heldNow reports whether l's destination is held by a Retry-After now.
func (d *Dispatcher) heldNow(l *lane) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return l.held.After(d.Now())
}

// unsent ends j's lease without an attempt: the delivery stays due, and
// goes out at a later pass (or after the restart).
func (d *Dispatcher) unsent(l *lane, j job) {
	d.mu.Lock()
	d.release(j.w.Delivery.ID)
	l.busy--
	if j.probe {
		l.healthOf(d.ProbeEvery).probing = false
	}
	d.mu.Unlock()
	d.sends.Done()
	d.Wake()
}
