package app

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net/textproto"
	"strings"
	"sync"
	"time"
)

// Dispatcher takes pending deliveries out of the outbox and sends them to
// their destinations, each destination with its own concurrency limit so a
// slow one never holds back the others. It wakes when a commit adds work,
// when a send ends while its destination has work waiting, and on a timer
// for the next due time (at most every readWait while work waits for
// slots); it never polls an idle outbox.
type Dispatcher struct {
	store  Outbox
	dests  []*Destination
	client *sendClient
	conns  *connSet // the client's connections, cut at shutdown
	// sourceSigs is, per source, the canonical name of the signature
	// header its config names (the hmac provider's), not forwarded to a
	// destination with forward_signatures = false.
	sourceSigs map[string]string
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger
	// Version goes into the User-Agent.
	Version string
	// Stats, when set, counts attempts for the status page and metrics.
	Stats *Stats
	// StoreRetry is how long a delivery whose attempt could not be recorded
	// (a full disk) waits before it goes out again, so the destination is
	// not hammered meanwhile; it doubles each time in a row.
	StoreRetry time.Duration
	// StoreRetryMax caps how long StoreRetry grows (doubling) for a
	// delivery whose attempts keep failing to be recorded.
	StoreRetryMax time.Duration
	// ProbeEvery is the least time between two probes of a failing
	// destination; it doubles after each failed probe up to ProbeMax.
	ProbeEvery, ProbeMax time.Duration

	wake     chan struct{}
	mu       sync.Mutex
	inflight map[uint64]bool // deliveries being sent: the in-memory lease
	busy     map[string]int  // sends in progress per destination
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
	sends      sync.WaitGroup
	// Each destination has Concurrency long-lived senders, started on its
	// first delivery, that take work from its queue: a goroutine per send
	// cost its start and the growth of its stack every time.
	queues map[string]chan job
	// health is what is known of each destination's answers (recovery.go).
	health map[string]*destHealth
	// backlog holds, per destination whose last read left due work
	// behind, when that read was (see dispatch). d.mu guards it.
	backlog map[string]time.Time
	senders *sync.WaitGroup // the senders of the current Run
	// Senders hand finished attempts to the recorder and take the next
	// delivery at once: a destination's concurrency counts requests in
	// flight, not requests waiting for their attempt's fsync. The lease
	// stays until the attempt is recorded.
	records chan finishedAttempt
}

// finishedAttempt is an attempt waiting to be recorded.
type finishedAttempt struct {
	dest         *Destination
	w            Work
	rec          AttemptRecord
	early, probe bool
	retryAfter   time.Duration
}

// readWait is the longest a destination with work waiting goes without a
// read of the outbox while some of its slots are free.
const readWait = time.Millisecond

// maxRecordBatch bounds how many attempts share one write.
const maxRecordBatch = 1024

// NewDispatcher builds the dispatcher for cfg's destinations over store.
func NewDispatcher(cfg *Config, store Outbox) *Dispatcher {
	d := &Dispatcher{
		store:      store,
		dests:      cfg.Destinations,
		conns:      newConnSet(cfg.Destinations),
		Now:        time.Now,
		StoreRetry: 5 * time.Second,
		Logger:     slog.With("component", "dispatch"),
		Version:    "dev",
		wake:       make(chan struct{}, 1),
		inflight:   map[uint64]bool{},
		finished:   map[uint64]uint64{},
		busy:       map[string]int{},
		queues:     map[string]chan job{},
		backlog:    map[string]time.Time{},
	}
	d.StoreRetryMax, d.unrecorded = 5*time.Minute, map[uint64]int{}
	d.ProbeEvery, d.ProbeMax, d.health = DefaultProbeEvery, DefaultProbeMax, map[string]*destHealth{}
	d.client = newSendClient(cfg.Destinations, d.conns)
	d.sourceSigs = map[string]string{}
	for _, src := range cfg.Sources {
		if h := src.Settings.SignatureHeader; h != "" {
			d.sourceSigs[src.Name] = textproto.CanonicalMIMEHeaderKey(h)
		}
	}
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
	context.AfterFunc(ctx, d.conns.stopDials)
	context.AfterFunc(sendCtx, d.conns.closeAll)
	records := make(chan finishedAttempt, maxRecordBatch)
	senders := &sync.WaitGroup{}
	d.records, d.senders = records, senders
	go d.record(records)
	defer func() { // the senders finish what they hold, then return
		for _, q := range d.queues {
			close(q)
		}
		d.queues = map[string]chan job{}
		go func() { // the recorder records what they finished, then returns
			senders.Wait()
			close(records)
		}()
	}()
	for {
		next := d.dispatch(sendCtx)
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
	d.pass++
	pass := d.pass
	for id, p := range d.finished {
		if p < pass { // ended before this pass began: its reads see the record
			delete(d.finished, id)
		}
	}
	d.mu.Unlock()
	skip := func(id uint64) bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		p, ended := d.finished[id]
		return d.inflight[id] || ended && p >= pass
	}
	now := d.Now()
	if d.Stats.storage().Failing() {
		// Nothing goes out while commits fail: an outcome that cannot be
		// recorded means the same send again later. The deliveries wait in
		// the outbox; StorageHealth wakes us when commits work again.
		return now.Add(probeEvery)
	}
	_, earliest, err := d.store.FirePending(ctx, now)
	if err != nil {
		d.Stats.storage().Failure(d.Logger, "fire pending deliveries", err)
		earliest = now.Add(5 * time.Second)
	}
	for _, dest := range d.dests {
		d.mu.Lock()
		free := dest.Concurrency - d.busy[dest.Name]
		at, backlogged := d.backlog[dest.Name]
		if !backlogged {
			// From here on a finishing send wakes us: its slot may be
			// wanted by work this pass does not read (no slot is free) or
			// reads too late (it ends during the read). Set in the same
			// lock as free is read, so no ending send falls in between.
			d.backlog[dest.Name] = now
		}
		d.mu.Unlock()
		if free <= 0 {
			continue
		}
		// With more due than slots, wait for a quarter of the slots (or
		// readWait) before reading again: a read scans past every delivery
		// in flight, and reading for each slot as it freed cost more than
		// the sends (87 keys scanned per delivery at 64 slots).
		if backlogged && free < max(1, dest.Concurrency/4) && now.Sub(at) < readWait {
			earliest = earlier(earliest, at.Add(readWait))
			continue
		}
		work, next, err := d.store.DueDeliveries(ctx, dest.Name, now, free, skip)
		if err != nil {
			d.Stats.storage().Failure(d.Logger, "read outbox", err, "destination", dest.Name)
			next = now.Add(5 * time.Second) // try again soon, not in a loop
		}
		d.mu.Lock()
		if len(work) == free && !next.IsZero() && !next.After(now) {
			d.backlog[dest.Name] = now // work left behind
		} else {
			delete(d.backlog, dest.Name) // new work wakes us when committed
		}
		d.mu.Unlock()
		earliest = earlier(earliest, next)
		for _, w := range work {
			d.start(ctx, dest, job{w: w})
		}
		if err == nil {
			more, at := d.beyondDue(ctx, dest, now, free-len(work), next, skip)
			for _, j := range more {
				d.start(ctx, dest, j)
			}
			earliest = earlier(earliest, at)
		}
	}
	return earliest
}

// start leases j's delivery and hands it to one of dest's senders.
func (d *Dispatcher) start(ctx context.Context, dest *Destination, j job) {
	d.mu.Lock()
	d.inflight[j.w.Delivery.ID] = true
	d.busy[dest.Name]++
	d.mu.Unlock()
	d.sends.Add(1)
	d.queue(ctx, dest) <- j // never blocks: busy stays within Concurrency
}

// earlier returns the earlier of a and b, a zero time meaning none.
func earlier(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// queue returns dest's work queue, starting its senders on first use.
// Only the Run goroutine calls it.
func (d *Dispatcher) queue(ctx context.Context, dest *Destination) chan job {
	q := d.queues[dest.Name]
	if q == nil {
		q = make(chan job, dest.Concurrency)
		d.queues[dest.Name] = q
		records, senders := d.records, d.senders
		senders.Add(dest.Concurrency)
		for range dest.Concurrency {
			go func() {
				defer senders.Done()
				for j := range q {
					d.send(ctx, dest, j, records)
				}
			}()
		}
	}
	return q
}

// release ends the lease of delivery id; d.mu is held.
func (d *Dispatcher) release(id uint64) {
	delete(d.inflight, id)
	d.finished[id] = d.pass
}

// send makes one attempt and hands it to the recorder, which ends the
// lease. An attempt cut short by shutdown is not recorded, nor one that
// had not connected when the stop began, nor one the stop kept from
// starting: the delivery stays due and goes out after the restart.
func (d *Dispatcher) send(ctx context.Context, dest *Destination, j job, records chan<- finishedAttempt) {
	w := j.w
	a := &Attempt{Start: d.Now()}
	var res result
	if !d.conns.stopping() {
		res = d.post(ctx, dest, w, w.Delivery.Attempts+1)
	}
	a.Duration = d.Now().Sub(a.Start)
	if ctx.Err() != nil || d.conns.stopping() && res.status == 0 {
		d.mu.Lock()
		d.release(w.Delivery.ID)
		d.busy[dest.Name]--
		if j.probe {
			d.healthOf(dest.Name).probing = false
		}
		d.mu.Unlock()
		d.sends.Done()
		d.Wake()
		return
	}
	a.Status, a.Response = res.status, res.snippet
	if res.err != nil {
		a.Error = res.err.Error()
	}
	state, due := d.outcome(dest, w.Delivery, res, a.Start.Add(a.Duration))
	if j.early {
		state, due = earlyOutcome(w, res, state, due)
	}
	if state != Delivered && a.Error == "" {
		a.Error = fmt.Sprintf("HTTP %d", res.status)
	}
	if res.note != "" { // the status stands; the record says the answer was cut
		a.Error = strings.TrimPrefix(a.Error+"; "+res.note, "; ")
	}
	// Waits only when the recorder is a whole batch behind, which holds
	// the senders back while the disk is slower than the destinations.
	records <- finishedAttempt{dest: dest, w: w, rec: AttemptRecord{ID: w.Delivery.ID, Attempt: a, State: state, Due: due, Early: j.early},
		early: j.early, probe: j.probe, retryAfter: res.retryAfter}
	d.mu.Lock()
	d.busy[dest.Name]--
	_, backlogged := d.backlog[dest.Name]
	d.mu.Unlock()
	if backlogged { // else new work wakes us when it is committed
		d.Wake()
	}
}

// record stores finished attempts, as many per write as queued while the
// last write committed, until records is closed.
func (d *Dispatcher) record(records <-chan finishedAttempt) {
	batch := make([]finishedAttempt, 0, maxRecordBatch)
	recs := make([]AttemptRecord, 0, maxRecordBatch)
	for f := range records {
		batch = append(batch[:0], f)
	more:
		for len(batch) < maxRecordBatch {
			select {
			case f, ok := <-records:
				if !ok {
					break more
				}
				batch = append(batch, f)
			default:
				break more
			}
		}
		recs = recs[:0]
		for _, f := range batch {
			recs = append(recs, f.rec)
		}
		d.recorded(batch, d.store.RecordAttempts(context.Background(), recs)) // not Run's ctx: what was sent is recorded even at shutdown
	}
}

// recorded ends the leases of a recorded batch. An attempt that could not
// be recorded keeps its lease for a while: the delivery is still due and
// goes out again then, not in a tight loop against the destination, and
// later each time it fails to be recorded again: StoreRetry, doubling up
// to StoreRetryMax.
func (d *Dispatcher) recorded(batch []finishedAttempt, errs []error) {
	var held map[time.Duration][]uint64 // by how long they wait
	retry := false
	var failed int
	var firstErr error
	d.mu.Lock()
	for i, f := range batch {
		id := f.rec.ID
		if d.heard(f, errs[i] == nil) {
			retry = true // wake: the walk begins
		}
		if errs[i] != nil {
			n := min(d.unrecorded[id]+1, 30)
			d.unrecorded[id] = n
			wait := min(d.StoreRetry<<(n-1), d.StoreRetryMax)
			if held == nil {
				held = map[time.Duration][]uint64{}
			}
			held[wait] = append(held[wait], id)
			failed++
			firstErr = cmp.Or(firstErr, errs[i])
			continue
		}
		delete(d.unrecorded, id)
		d.release(id)
		retry = retry || f.rec.State == Pending
	}
	d.mu.Unlock()
	for wait, ids := range held {
		time.AfterFunc(wait, func() {
			d.mu.Lock()
			for _, id := range ids {
				d.release(id)
			}
			d.mu.Unlock()
			d.Wake()
		})
	}
	if failed > 0 {
		d.Stats.storage().Unrecorded(d.Logger, failed, firstErr)
	}
	if retry { // its next due time sets the timer
		d.Wake()
	}
	for i, f := range batch {
		if errs[i] != nil {
			d.sends.Done()
			continue
		}
		a := f.rec.Attempt
		d.Stats.Attempt(f.dest.Name, f.rec.State, a.Duration)
		switch f.rec.State {
		case Dead:
			d.Logger.Warn("delivery dead", "delivery", f.rec.ID, "destination", f.dest.Name,
				"event", f.w.Event.ID, "attempts", a.N, "last_error", a.Error)
		case Pending:
			d.Logger.Debug("delivery will retry", "delivery", f.rec.ID, "destination", f.dest.Name, "due", f.rec.Due, "error", a.Error)
		}
		d.sends.Done()
	}
}
