package app

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"hookbox/app/provider"
)

// Dispatcher takes pending deliveries out of the outbox and sends them to
// their destinations, each destination with its own concurrency limit so a
// slow one never holds back the others. It wakes when a commit adds work,
// when a send ends while its destination has work waiting, and on a timer
// for the next due time (at most every readWait while work waits for
// slots); it never polls an idle outbox.
type Dispatcher struct {
	store  Store
	dests  []*Destination
	client *fasthttp.Client
	conns  *connSet // the client's connections, cut at shutdown
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger
	// Version goes into the User-Agent.
	Version string
	// OnFired is told how many debounced deliveries of a route went out.
	OnFired func(route string, n int)
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
func NewDispatcher(cfg *Config, store Store) *Dispatcher {
	d := &Dispatcher{
		store:      store,
		dests:      cfg.Destinations,
		conns:      newConnSet(cfg.Destinations),
		Now:        time.Now,
		StoreRetry: 5 * time.Second,
		Logger:     slog.With("component", "dispatch"),
		Version:    "dev",
		OnFired:    func(string, int) {},
		wake:       make(chan struct{}, 1),
		inflight:   map[uint64]bool{},
		finished:   map[uint64]uint64{},
		busy:       map[string]int{},
		queues:     map[string]chan job{},
		backlog:    map[string]time.Time{},
	}
	d.StoreRetryMax, d.unrecorded = 5*time.Minute, map[uint64]int{}
	d.ProbeEvery, d.ProbeMax, d.health = DefaultProbeEvery, DefaultProbeMax, map[string]*destHealth{}
	d.client = newSendClient(cfg.Destinations, d.conns.dial)
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
	// for the destination's timeout. fasthttp's client does not watch a
	// context: once sendCtx is done, the sends in flight are cut by closing
	// their connections (after Run has returned, as sends go on under
	// sendCtx).
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
	fired, earliest, err := d.store.FirePending(now)
	if err != nil {
		d.Stats.storage().Failure(d.Logger, "fire pending deliveries", err)
		earliest = now.Add(5 * time.Second)
	}
	for route, n := range fired {
		d.OnFired(route, n)
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
		work, next, err := d.store.DueDeliveries(dest.Name, now, free, skip)
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
			more, at := d.beyondDue(dest, now, free-len(work), next, skip)
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
		d.recorded(batch, d.store.RecordAttempts(recs))
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
		d.Stats.Attempt(f.dest.Name, f.rec.State, a.Duration, a.Error)
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

// outcome decides what follows an attempt: 2xx delivered; 410 dead at once;
// otherwise the next step of the schedule (Retry-After honoured on 429 and
// 503, capped by the longest step), or dead when the schedule is done.
func (d *Dispatcher) outcome(dest *Destination, dl *Delivery, res result, now time.Time) (DeliveryState, time.Time) {
	switch {
	case res.err == nil && res.status >= 200 && res.status < 300:
		return Delivered, time.Time{}
	case res.status == http.StatusGone:
		return Dead, time.Time{}
	case dl.Tries >= len(dest.Retry):
		return Dead, time.Time{}
	}
	wait := jitter(dest.Retry[dl.Tries])
	if res.retryAfter > 0 && (res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable) {
		wait = min(res.retryAfter, slices.Max(dest.Retry))
	}
	return Pending, now.Add(wait)
}

// jitter spreads d over ±retryJitter so that retries of a burst do not
// arrive together.
func jitter(d time.Duration) time.Duration {
	return time.Duration(float64(d) * (1 - retryJitter + 2*retryJitter*rand.Float64()))
}

// result is what one HTTP attempt produced.
type result struct {
	status     int
	snippet    []byte
	retryAfter time.Duration
	err        error
	// note says why the answer was not read to its end, when it was not;
	// the status stands.
	note string
}

// hopHeaders are not forwarded: they describe the inbound connection, or
// hookbox sets them itself.
var hopHeaders = map[string]bool{
	"content-length": true, "host": true, "connection": true, "transfer-encoding": true,
	"user-agent": true, "accept-encoding": true, "webhook-id": true, "webhook-timestamp": true,
	"webhook-signature": true,
}

// MessageID is the webhook-id of the delivery of event (source, id) to
// dest: stable across retries and replays, so the receiver can dedupe.
func MessageID(source, id, dest string) string {
	h := sha256.Sum256([]byte(source + "\x00" + id + "\x00" + dest))
	return "msg_" + hex.EncodeToString(h[:16])
}

// newSendClient is the HTTP client deliveries go out with. It sends only
// to the configured URL: no proxy from the environment, no redirect
// followed (a 3xx is a failed attempt), HTTP/1.1 with keep-alive. It does
// the request in the calling goroutine, which costs about half of what
// net/http's client costs per delivery (BENCHMARKS.md). It opens its
// connections with dial.
func newSendClient(dests []*Destination, dial fasthttp.DialFunc) *fasthttp.Client {
	conns := 1
	for _, d := range dests { // destinations may share a host
		conns += d.Concurrency
	}
	return &fasthttp.Client{
		Dial:                     dial,
		NoDefaultUserAgentHeader: true,
		MaxConnsPerHost:          conns,
		MaxIdleConnDuration:      90 * time.Second,
		ReadBufferSize:           16 << 10, // the longest response header accepted
		WriteBufferSize:          16 << 10,
		// Without a limit the client reads a whole answer of any declared
		// Content-Length into memory before post sees it (4 GiB for a
		// hostile destination). With it, a longer answer is streamed to
		// post, which reads it bounded (readAnswer).
		MaxResponseBodySize: MaxResponseSnippet,
		StreamResponseBody:  true, // status first; the body is read by post, bounded
		// A POST is not retried on another connection by the client: the
		// dispatcher's schedule decides when to try again.
		RetryIf: func(*fasthttp.Request) bool { return false },
	}
}

// connSet keeps the send client's open connections, so that shutdown can
// cut the sends in flight; after stopDials it cuts the dials in progress
// and refuses new ones.
type connSet struct {
	// timeouts is each destination address's connect timeout: its
	// destination's timeout, as fasthttp's client gives when it dials
	// itself (the longest where destinations share an address).
	timeouts map[string]time.Duration
	// dialCtx ends when the stop begins (stopDials); stopped says so
	// without a lock, for every send.
	dialCtx    context.Context
	cancelDial context.CancelFunc
	stopped    atomic.Bool
	mu         sync.Mutex
	open       map[*trackedConn]struct{}
	closed     bool
}

func newConnSet(dests []*Destination) *connSet {
	s := &connSet{timeouts: map[string]time.Duration{}, open: map[*trackedConn]struct{}{}}
	s.dialCtx, s.cancelDial = context.WithCancel(context.Background())
	for _, d := range dests {
		u, err := url.Parse(d.URL)
		if err != nil {
			continue // the config refuses such URLs
		}
		addr := fasthttp.AddMissingPort(strings.ToLower(u.Host), u.Scheme == "https")
		s.timeouts[addr] = max(s.timeouts[addr], d.Timeout)
	}
	return s
}

// errStopping is the error of a dial cut or refused by the stop.
var errStopping = errors.New("shutting down")

// dial connects over IPv4 as fasthttp's own dial does, tracked, and cut
// when the stop begins.
func (s *connSet) dial(addr string) (net.Conn, error) {
	timeout := s.timeouts[addr]
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	c, err := (&net.Dialer{Timeout: timeout}).DialContext(s.dialCtx, "tcp4", addr)
	if err != nil {
		if s.stopping() {
			return nil, errStopping
		}
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.stopping() {
		c.Close()
		return nil, errStopping
	}
	tc := &trackedConn{Conn: c, set: s}
	s.open[tc] = struct{}{}
	return tc, nil
}

// stopDials cuts the dials in progress and refuses new ones.
func (s *connSet) stopDials() {
	s.stopped.Store(true)
	s.cancelDial()
}

// stopping reports whether the stop began: no dial is made any more.
func (s *connSet) stopping() bool { return s.stopped.Load() }

// closeAll closes every open connection and every later one.
func (s *connSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	open := s.open
	s.open = map[*trackedConn]struct{}{}
	s.mu.Unlock()
	for c := range open {
		c.Conn.Close()
	}
}

// trackedConn is a send connection that leaves its set when closed.
type trackedConn struct {
	net.Conn
	set *connSet
}

func (c *trackedConn) Close() error {
	c.set.mu.Lock()
	delete(c.set.open, c)
	c.set.mu.Unlock()
	return c.Conn.Close()
}

func (d *Dispatcher) post(ctx context.Context, dest *Destination, w Work, attempt int) result {
	if ctx.Err() != nil { // shutting down
		return result{err: context.Cause(ctx)}
	}
	e := w.Event
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(dest.URL)
	req.Header.SetMethod(fasthttp.MethodPost)
	req.Header.SetNoDefaultContentType(true) // the sender's Content-Type, or none
	for _, h := range e.Header {
		if !hopHeaders[strings.ToLower(h.Name)] {
			req.Header.Add(h.Name, h.Value)
		}
	}
	for k, v := range dest.Headers {
		req.Header.Set(k, v)
	}
	now := d.Now()
	msgID := MessageID(e.Source, e.ID, dest.Name)
	req.Header.Set("User-Agent", "hookbox/"+d.Version)
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	if dest.Secret != nil {
		sig, err := provider.Sign("standard", provider.Settings{Secrets: [][]byte{dest.Secret}}, e.Body, "", msgID, "", now)
		if err != nil {
			return result{err: errors.New("cannot sign with the destination secret")}
		}
		req.Header.Set("webhook-signature", sig.Get("webhook-signature"))
	}
	req.Header.Set("X-Hookbox-Source", e.Source)
	req.Header.Set("X-Hookbox-Event-Id", e.ID)
	req.Header.Set("X-Hookbox-Topic", e.Topic)
	req.Header.Set("X-Hookbox-Attempt", strconv.Itoa(attempt))
	req.SetBodyRaw(e.Body)

	// The client's deadline (dest.Timeout from here) stays on the
	// connection while the body is read below: connect, write, headers and
	// body all end by then.
	err := d.client.DoTimeout(req, resp, dest.Timeout)
	if err != nil && !errors.Is(err, fasthttp.ErrBodyTooLarge) {
		return result{err: sendError(err, dest.Timeout)}
	}
	res := result{status: resp.StatusCode(), retryAfter: retryAfter(string(resp.Header.Peek("Retry-After")), now)}
	if err != nil {
		// The headers came, then a body without a length that runs on past
		// what is kept: the client read MaxResponseSnippet+1 bytes of it and
		// closed the connection. The status stands, as for any long answer.
		b := resp.Body()
		res.snippet, res.note = bytes.Clone(b[:min(len(b), MaxResponseSnippet)]), answerTooLong
		return res
	}
	res.snippet, res.note = readAnswer(resp, dest.Timeout)
	return res
}

// maxDrain is how much of an answer past the kept snippet is read, and
// thrown away, so that its connection can carry the next delivery; a
// longer answer is not read: its connection is closed instead.
const maxDrain = 64 << 10

// answerTooLong notes an attempt whose answer was cut because it was longer
// than hookbox reads.
const answerTooLong = "answer longer than hookbox reads: the rest was not read, the connection closed"

// readAnswer keeps the first MaxResponseSnippet bytes of resp's body, reads
// at most maxDrain more, and closes the connection unless the body ended
// within that, whatever Content-Length said. The note says why an answer
// was cut ("" when it was read whole). The connection's deadline (timeout)
// bounds the time.
func readAnswer(resp *fasthttp.Response, timeout time.Duration) (snippet []byte, note string) {
	defer resp.CloseBodyStream() // releases the connection, or closes it
	body := resp.BodyStream()
	if body == nil { // no body at all (204, 304)
		return nil, ""
	}
	snippet, err := io.ReadAll(io.LimitReader(body, MaxResponseSnippet))
	if err == nil {
		var n int64
		n, err = io.Copy(io.Discard, io.LimitReader(body, maxDrain+1))
		if err == nil && n > maxDrain {
			resp.SetConnectionClose()
			return snippet, answerTooLong
		}
	}
	if err != nil {
		resp.SetConnectionClose() // the rest of the answer may still come
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() || errors.Is(err, fasthttp.ErrTimeout) {
			return snippet, fmt.Sprintf("answer cut at the %v timeout", timeout)
		}
		return snippet, "answer cut: " + sendError(err, timeout).Error()
	}
	return snippet, ""
}

// sendError turns a client error into a short text without the URL, which
// may carry a credential in its query.
func sendError(err error, timeout time.Duration) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("no answer within %v", timeout)
		}
		err = ue.Err
	}
	var te interface{ Timeout() bool }
	if errors.Is(err, fasthttp.ErrTimeout) || errors.Is(err, fasthttp.ErrDialTimeout) || errors.As(err, &te) && te.Timeout() {
		return fmt.Errorf("no answer within %v", timeout)
	}
	var rh tls.RecordHeaderError
	if errors.As(err, &rh) && string(rh.RecordHeader[:]) == "HTTP/" {
		return errors.New("server gave HTTP response to HTTPS client")
	}
	return err
}

// maxRetryAfter is what a Retry-After beyond a Duration means: as long as
// possible (outcome caps it by the longest step), never a wrapped value.
const maxRetryAfter = time.Duration(math.MaxInt64)

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case s <= 0:
			return 0
		case s >= int64(maxRetryAfter/time.Second):
			return maxRetryAfter
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
