// The node's stream hub: while someone listens, it reads the events the
// store accepted (on PostgreSQL, any node's) and fans each out to the
// listeners whose filters match.

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// StreamHubStore is what the hub reads of a store: the events after a
// cursor, one event by seq (a gap's re-check), and the newest event (where
// a hub starts).
type StreamHubStore interface {
	StreamStore
	Event(ctx context.Context, seq uint64) (*Event, error)
	ListEvents(ctx context.Context, q EventQuery) ([]EventSummary, uint64, error)
}

// StreamFilter picks the events a listener gets: Source exactly and Topic
// as a Glob; empty matches all.
type StreamFilter struct {
	Source string
	Topic  string
}

// Match reports whether e passes f.
func (f StreamFilter) Match(e *Event) bool {
	return (f.Source == "" || f.Source == e.Source) && (f.Topic == "" || Glob(f.Topic, e.Topic))
}

// StreamLimitError refuses a listener past StreamPerUser or StreamMax;
// its message is a sentence for the client (the API answers 429).
type StreamLimitError struct{ Message string }

func (e *StreamLimitError) Error() string { return e.Message }

// ErrStreamClosed ends every stream when the hub closes (server shutdown).
var ErrStreamClosed = errors.New("stream closed")

// streamPage is how many events one read of the store takes.
const streamPage = 256

// streamMaxPages bounds the pages one poll reads, so a burst does not
// hold the listeners' queues back from their writers for long.
const streamMaxPages = 16

// streamMaxGaps bounds the missing seqs a hub waits for: when a jump of
// seqs is wider, the lowest are not waited for.
const streamMaxGaps = 4096

// StreamHub reads new events while listeners are connected and hands each
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
type StreamHub struct {
	store StreamHubStore
	// The bounds, from the Stream* constants; tests shorten them.
	Poll, GapWait, Resume        time.Duration
	ResumeMax, Queue, QueueBytes int
	PerUser, Max                 int
	Now                          func() time.Time
	Logger                       *slog.Logger
	startMu                      sync.Mutex // one start at a time
	pollMu                       sync.Mutex // one poll at a time
	mu                           sync.Mutex // guards what follows
	listeners                    map[*StreamListener]struct{}
	perKey                       map[string]int
	running, closed              bool
	high                         uint64
	missing                      map[uint64]*streamGap
	wake, stop                   chan struct{}
	done                         chan struct{} // closed when the poller of this run returns
	onPoll                       func()        // tests: after each poll
}

// streamGap is a seq the hub waits for.
type streamGap struct {
	first, next time.Time
	every       time.Duration
}

// NewStreamHub returns a hub over store with the Stream* bounds.
func NewStreamHub(store StreamHubStore) *StreamHub {
	return &StreamHub{store: store, Poll: StreamPoll, GapWait: StreamGapWait, Resume: StreamResume, ResumeMax: StreamResumeMax,
		Queue: StreamQueue, QueueBytes: StreamQueueBytes, PerUser: StreamPerUser, Max: StreamMax, Now: time.Now,
		Logger: slog.With("component", "stream"), listeners: map[*StreamListener]struct{}{}, perKey: map[string]int{},
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
}

// Wake has the hub read new events now rather than at its next poll (the
// store's OnOpened); it never blocks and costs nothing when nobody listens.
func (h *StreamHub) Wake() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// Listeners returns how many listeners are connected.
func (h *StreamHub) Listeners() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.listeners)
}

// Subscribe connects a listener of key (a user's or token's name) with
// filter f. With resume, it first gets the events after lastID accepted
// within Resume (at most ResumeMax), then a gap notice if some were
// skipped; then a ready notice, then live events. It fails with a
// *StreamLimitError past PerUser or Max, ErrStreamClosed after Close. The
// caller must Close the listener.
func (h *StreamHub) Subscribe(ctx context.Context, key string, f StreamFilter, resume bool, lastID uint64) (*StreamListener, error) {
	h.startMu.Lock()
	defer h.startMu.Unlock()
	h.mu.Lock()
	switch {
	case h.closed:
		h.mu.Unlock()
		return nil, ErrStreamClosed
	case len(h.listeners) >= h.Max:
		h.mu.Unlock()
		return nil, &StreamLimitError{fmt.Sprintf("this server already streams to %d listeners, its most; retry later", h.Max)}
	case h.perKey[key] >= h.PerUser:
		h.mu.Unlock()
		return nil, &StreamLimitError{fmt.Sprintf("%s already has %d streams open, the most per user or token; close one first", key, h.PerUser)}
	}
	running := h.running
	h.mu.Unlock()
	if !running {
		if err := h.start(ctx); err != nil {
			return nil, err
		}
	}
	l := &StreamListener{hub: h, filter: f, key: key, signal: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, ErrStreamClosed
	}
	h.listeners[l] = struct{}{}
	h.perKey[key]++
	l.readyPending = true
	if resume {
		l.startResume(lastID, h.high, h.missing, h.Now())
	}
	return l, nil
}

// start reads where the newest event is and starts the poller.
func (h *StreamHub) start(ctx context.Context) error {
	newest, _, err := h.store.ListEvents(ctx, EventQuery{Limit: 1})
	if err != nil {
		return fmt.Errorf("stream: find the newest event: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return ErrStreamClosed
	}
	h.high, h.missing = 0, map[uint64]*streamGap{}
	if len(newest) > 0 {
		h.high = newest[0].Seq
	}
	h.running = true
	h.done = make(chan struct{})
	go h.run(h.done)
	return nil
}

// run polls while listeners are connected, then returns.
func (h *StreamHub) run(done chan struct{}) {
	defer close(done)
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
		h.poll(context.Background())
		t.Reset(h.Poll)
	}
}

// poll re-checks the gaps due and reads the events above high, sending
// what it finds.
func (h *StreamHub) poll(ctx context.Context) {
	h.pollMu.Lock()
	defer h.pollMu.Unlock()
	defer func() {
		if h.onPoll != nil {
			h.onPoll()
		}
	}()
	h.recheck(ctx) // first, so that a late seq goes out before the ones above it
	h.mu.Lock()
	high := h.high
	h.mu.Unlock()
	for range streamMaxPages {
		es, err := h.store.EventsAfter(ctx, high, streamPage)
		if err != nil {
			h.Logger.Warn("stream: read new events", slog.Any("error", err))
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
		if len(es) < streamPage {
			break
		}
	}
}

// noteGaps records the seqs between high and seq as missing (under mu).
func (h *StreamHub) noteGaps(high, seq uint64, now time.Time) {
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
func (h *StreamHub) recheck(ctx context.Context) {
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
			h.Logger.Warn("stream: re-read a missing event", slog.Uint64("seq", s), slog.Any("error", err))
			return
		}
		h.mu.Lock()
		if g := h.missing[s]; g != nil {
			if e != nil {
				delete(h.missing, s)
				h.publishLocked(e)
			} else {
				g.every *= 2
				g.next = now.Add(g.every)
			}
		}
		h.mu.Unlock()
	}
}

// publishLocked queues e for every listener that matches (under mu).
func (h *StreamHub) publishLocked(e *Event) {
	for l := range h.listeners {
		if l.filter.Match(e) && !l.push(e) {
			delete(h.listeners, l) // dropped: it keeps its place in perKey until Close
		}
	}
}

// GapStep is how long after it is seen missing a seq is first re-read
// (GapWait/50, StreamPoll by default); each re-read then waits twice as
// long as the one before.
func (h *StreamHub) GapStep() time.Duration { return max(h.GapWait/50, time.Millisecond) }

// remove disconnects l.
func (h *StreamHub) remove(l *StreamListener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.listeners, l)
	if h.perKey[l.key]--; h.perKey[l.key] <= 0 {
		delete(h.perKey, l.key)
	}
	h.Wake() // the poller stops when nobody is left
}

// Close ends every stream (each listener's Next returns ErrStreamClosed at
// once) and stops polling; Subscribe fails from then on.
func (h *StreamHub) Close() {
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
