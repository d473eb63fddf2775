// The node's stream hub: while someone listens, it reads the events the
// store accepted (on PostgreSQL, any node's) and fans each out to the
// listeners whose filters match.

package stream

import (
	"context"
	"errors"
	"fmt"
	"hookbox/app"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Filter picks the events a listener gets: Source exactly and Topic
// as a Glob; empty matches all.
type Filter struct {
	Source string
	Topic  string
}

// Match reports whether e passes f.
func (f Filter) Match(e *app.Event) bool {
	return (f.Source == "" || f.Source == e.Source) && (f.Topic == "" || app.Glob(f.Topic, e.Topic))
}

// LimitError refuses a listener past StreamPerUser or StreamMax;
// its message is a sentence for the client (the API answers 429).
type LimitError struct{ Message string }

func (e *LimitError) Error() string { return e.Message }

// ErrClosed ends every stream when the hub closes (server shutdown).
var ErrClosed = errors.New("stream closed")

// streamPage is how many events one read of the store takes, and
// streamPageBytes how much of their bodies (beyond the first): what a read
// holds is bounded whatever size the senders give their bodies.
const (
	streamPage      = 256
	streamPageBytes = 1 << 20
)

// streamMaxPages bounds the pages one poll reads, so a burst does not
// hold the listeners' queues back from their writers for long.
const streamMaxPages = 16

// streamMaxGaps bounds the missing seqs a hub waits for: when a jump of
// seqs is wider, the lowest are not waited for.
const streamMaxGaps = 4096

// Hub reads new events while listeners are connected and hands each
// to the listeners whose filters match. Events are shared between the
// listeners, never copied: nobody may change them.
//
// Gaps: PostgreSQL hands out seqs before commit, so seq 7 may commit after
// 8 was read, and a duplicate or a rolled-back accept leaves a seq that
// never commits. The hub's cursor is high (every seq up to it was read or
// is in missing) and missing (seqs below high not seen yet, the low-water
// mark being the lowest). A missing seq is re-read by itself (Event) at
// growing intervals (GapStep, then doubling) until it shows up, sent
// then, or StreamGapWait passes and it is given up. Cost: about six point
// reads of the primary key per gap, whatever the rate (on PostgreSQL every
// duplicate webhook leaves one); nothing on bbolt, whose seqs commit in
// order.
type Hub struct {
	store app.StreamHubStore
	// The bounds, from the Stream* constants; tests shorten them.
	Poll, GapWait, Resume        time.Duration
	ResumeMax, Queue, QueueBytes int
	HubBytes                     int
	PerUser, Max                 int
	Now                          func() time.Time
	Logger                       *slog.Logger
	pollMu                       sync.Mutex // one poll at a time
	mu                           sync.Mutex // guards what follows
	listeners                    map[*Listener]struct{}
	perKey                       map[string]int
	running, closed              bool
	order                        uint64       // of the next event published
	queued                       atomic.Int64 // what the queues hold (EventMemory), each event once
	high                         uint64
	missing                      map[uint64]*streamGap
	wake, stop                   chan struct{}
	done                         chan struct{} // closed when the poller of this run returns
	readLog                      app.Throttle  // of the line about failed reads
}

// streamGap is a seq the hub waits for.
type streamGap struct {
	first, next time.Time
	every       time.Duration
}

// NewHub returns a hub over store with the Stream* bounds.
func NewHub(store app.StreamHubStore) *Hub {
	return &Hub{store: store, Poll: app.StreamPoll, GapWait: app.StreamGapWait, Resume: app.StreamResume, ResumeMax: app.StreamResumeMax,
		Queue: app.StreamQueue, QueueBytes: app.StreamQueueBytes, HubBytes: app.StreamHubBytes, PerUser: app.StreamPerUser, Max: app.StreamMax, Now: time.Now,
		Logger: slog.With("component", "stream"), listeners: map[*Listener]struct{}{}, perKey: map[string]int{},
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Wake has the hub read new events now rather than at its next poll (the
// store's OnOpened); it never blocks and costs nothing when nobody listens.
func (h *Hub) Wake() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Listeners returns how many listeners are connected.
func (h *Hub) Listeners() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.listeners)
}

// Subscribe connects a listener of key (a user's or token's name) with
// filter f. With resume, it first gets the events after lastID accepted
// within Resume (at most ResumeMax), then a gap notice if some were
// skipped; then a ready notice, then live events. It fails with a
// *LimitError past PerUser or Max, ErrClosed after Close. The
// caller must Close the listener.
//
// A lastID above the newest event stored is not this store's (its data was
// reset, or the client resumes against another hookbox): the listener gets
// a gap notice saying so and live events, none held back.
func (h *Hub) Subscribe(ctx context.Context, key string, f Filter, resume bool, lastID uint64) (*Listener, error) {
	var newest uint64
	fresh := false // newest was read for a start
	var unknown *app.StreamNotice
	if resume {
		n, err := h.newest(ctx)
		if err != nil {
			return nil, err
		}
		if lastID > n {
			resume = false
			unknown = &app.StreamNotice{Kind: app.StreamNoticeGap, Message: fmt.Sprintf(
				"Last-Event-ID %d is past this server's newest event (%d): its data is not the one you read; live from here", lastID, n)}
		}
	}
	for {
		h.mu.Lock()
		switch {
		case h.closed:
			h.mu.Unlock()
			return nil, ErrClosed
		case len(h.listeners) >= h.Max:
			h.mu.Unlock()
			return nil, &LimitError{fmt.Sprintf("this server already streams to %d listeners, its most; retry later", h.Max)}
		case h.perKey[key] >= h.PerUser:
			h.mu.Unlock()
			return nil, &LimitError{fmt.Sprintf("%s already has %d streams open, the most per user or token; close one first", key, h.PerUser)}
		}
		if h.running || fresh {
			break
		}
		h.mu.Unlock()
		// No poller: where it starts is the newest event now (read
		// without the lock; another Subscribe may start it meanwhile).
		n, err := h.newest(ctx)
		if err != nil {
			return nil, err
		}
		newest, fresh = n, true
	}
	defer h.mu.Unlock()
	if !h.running {
		h.high, h.missing = newest, map[uint64]*streamGap{}
		h.running = true
		h.done = make(chan struct{})
		go h.run(h.done)
	}
	l := &Listener{hub: h, filter: f, key: key, signal: make(chan struct{}, 1), readyPending: true, unknown: unknown}
	h.listeners[l] = struct{}{}
	h.perKey[key]++
	if resume {
		l.startResume(lastID, h.high, h.missing, h.Now())
	}
	return l, nil
}

// newest returns the seq of the newest event stored (0: none).
func (h *Hub) newest(ctx context.Context) (uint64, error) {
	list, _, err := h.store.ListEvents(ctx, app.EventQuery{Limit: 1})
	if err != nil {
		return 0, fmt.Errorf("stream: find the newest event: %w", err)
	}
	if len(list) == 0 {
		return 0, nil
	}
	return list[0].Seq, nil
}

// run polls while listeners are connected, then returns.
func (h *Hub) run(done chan struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.stop: // Close does not wait for a read under way
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTimer(h.Poll)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-h.wake:
		case <-t.C:
		}
		h.mu.Lock()
		if len(h.listeners) == 0 {
			h.running = false
			h.mu.Unlock()
			return
		}
		h.mu.Unlock()
		h.poll(ctx)
		t.Reset(h.Poll)
	}
}

// poll re-checks the gaps due and reads the events above high, sending
// what it finds.
func (h *Hub) poll(ctx context.Context) {
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	h.recheck(ctx) // first, so that a late seq goes out before the ones above it
	h.mu.Lock()
	high := h.high
	h.mu.Unlock()
	for range streamMaxPages {
		es, err := h.store.EventsAfter(ctx, high, streamPage, streamPageBytes)
		if err != nil {
			h.warn("stream: read new events", 0, err)
			return
		}
		now := h.Now()
		h.mu.Lock()
		for _, e := range es {
			h.noteGaps(high, e.Seq, now)
			high = e.Seq
			h.high = high
			h.publishLocked(e)
		}
		h.mu.Unlock()
		if len(es) == 0 { // a short page may have been cut by its bytes
			break
		}
	}
}

// noteGaps records the seqs between high and seq as missing (under mu).
func (h *Hub) noteGaps(high, seq uint64, now time.Time) {
	from := high + 1
	if seq-from > streamMaxGaps {
		from = seq - streamMaxGaps
	}
	for s := from; s < seq; s++ {
		if len(h.missing) >= streamMaxGaps {
			return
		}
		h.missing[s] = &streamGap{first: now, next: now.Add(h.GapStep()), every: h.GapStep()}
	}
}

// recheck reads each missing seq whose time has come: found, it is sent;
// missing past GapWait, it is given up; else its next read waits twice as
// long.
func (h *Hub) recheck(ctx context.Context) {
	now := h.Now()
	var due []uint64
	h.mu.Lock()
	for s, g := range h.missing {
		if now.Sub(g.first) >= h.GapWait {
			delete(h.missing, s)
		} else if !now.Before(g.next) {
			due = append(due, s)
		}
	}
	h.mu.Unlock()
	for _, s := range due {
		e, err := h.store.Event(ctx, s)
		if err != nil {
			h.warn("stream: re-read a missing event", s, err)
			return
		}
		h.mu.Lock()
		if g := h.missing[s]; g != nil {
			if e != nil {
				delete(h.missing, s)
				h.publishLocked(e)
			} else {
				g.every = app.Backoff{First: h.GapStep(), Max: h.GapWait}.Next(g.every)
				g.next = now.Add(g.every)
			}
		}
		h.mu.Unlock()
	}
}

// publishLocked queues e for every listener that matches (under mu), one
// item shared by their queues; then, while the queues hold more than
// HubBytes, it drops the listener furthest behind (the oldest event
// queued), so that the others go on.
func (h *Hub) publishLocked(e *app.Event) {
	it := &streamItem{e: e, size: EventMemory(e), order: h.order}
	h.order++
	for l := range h.listeners {
		if l.filter.Match(e) && !l.push(it) {
			delete(h.listeners, l) // dropped: it keeps its place in perKey until Close
		}
	}
	for h.queued.Load() > int64(h.HubBytes) {
		var slowest *Listener
		var first uint64
		for l := range h.listeners {
			if o, ok := l.oldest(); ok && o < it.order && (slowest == nil || o < first) {
				slowest, first = l, o
			}
		}
		if slowest == nil { // only e is queued: no one is behind
			return
		}
		slowest.drop()
		delete(h.listeners, slowest)
	}
}

// Queued returns what the listeners' queues hold, each event once
// (EventMemory): at most HubBytes, or one event beyond it.
func (h *Hub) Queued() int64 { return h.queued.Load() }

// hold counts it as queued once more.
func (h *Hub) hold(it *streamItem) {
	if it.refs.Add(1) == 1 {
		h.queued.Add(it.size)
	}
}

// release counts it as queued once less.
func (h *Hub) release(it *streamItem) {
	if it.refs.Add(-1) == 0 {
		h.queued.Add(-it.size)
	}
}

// warn logs a failed read at most once a minute (the store may be down
// for a while, and the hub reads every Poll).
func (h *Hub) warn(msg string, seq uint64, err error) {
	if ok, held := h.readLog.Allow(h.Now(), time.Minute); ok {
		h.Logger.Warn(msg, slog.Uint64("seq", seq), slog.Uint64("held", held), slog.Any("error", err))
	}
}

// GapStep is how long after it is seen missing a seq is first re-read
// (GapWait/50, StreamPoll by default); each re-read then waits twice as
// long as the one before.
func (h *Hub) GapStep() time.Duration { return max(h.GapWait/50, time.Millisecond) }

// remove disconnects l.
func (h *Hub) remove(l *Listener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.listeners, l)
	if h.perKey[l.key]--; h.perKey[l.key] <= 0 {
		delete(h.perKey, l.key)
	}
	h.Wake() // the poller stops when nobody is left
}

// Close ends every stream (each listener's Next returns ErrClosed at
// once) and stops polling; Subscribe fails from then on.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.stop)
	done := h.done
	for l := range h.listeners {
		l.end()
	}
	h.mu.Unlock()
	if done != nil {
		<-done
	}
}
