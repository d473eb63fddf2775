// One listener of the stream hub: its bounded queue of live events, and
// the resume that comes before them.

package stream

import (
	"context"
	"fmt"
	"hookbox/app"
	"sync"
	"sync/atomic"
	"time"
)

// Message is one message of a stream: an event or a notice.
type Message struct {
	// Event is shared with the other listeners: never change it.
	Event  *app.Event
	Notice *app.StreamNotice
}

// streamItem is one event queued for the listeners it matches: one per
// event, shared by their queues, never changed.
type streamItem struct {
	e *app.Event
	// size is what the event holds in memory (EventMemory).
	size int64
	// order is when the hub published it: a listener whose oldest item has
	// a lower order is further behind.
	order uint64
	// refs counts the queues that hold it; the hub's Queued counts its
	// size while it is above 0.
	refs atomic.Int32
}

// EventMemory is what e holds in memory, as the stream's bounds count it:
// its body, headers and names, and a fixed share for the rest.
func EventMemory(e *app.Event) int64 {
	n := int64(len(e.Body) + len(e.Source) + len(e.ID) + len(e.Topic) + 128)
	for _, f := range e.Header {
		n += int64(len(f.Name) + len(f.Value) + 32)
	}
	return n
}

// Listener is one connected stream: Next hands out its messages.
// Next is called from one goroutine; the hub pushes from another.
type Listener struct {
	hub    *Hub
	filter Filter
	key    string
	signal chan struct{} // cap 1: something was pushed, or the stream ended

	mu      sync.Mutex // guards queue, bytes, dropped, ended
	queue   []*streamItem
	bytes   int64 // the sizes of queue
	dropped bool  // fell behind: the dropped notice, then the end
	ended   bool  // the hub closed

	// What only Next's goroutine touches.
	readyPending bool
	unknown      *app.StreamNotice // a gap notice to send first: Last-Event-ID was not this store's
	resume       *streamResume
	told         bool // the dropped notice was handed out
	closeOnce    sync.Once
}

// streamResume is a resume in progress: the events in (after, until] not
// older than since, read from the store a page at a time.
type streamResume struct {
	lastID, after, until uint64
	since                time.Time
	sent                 int
	skipped              int // older than the window
	cutShort             bool
	// maybeLive are the seqs the hub was waiting for when the listener
	// joined: one read here may come live as well, and is then not sent
	// again; one at or below lastID that comes live is sent (this hub
	// never sent it), any other live event at or below lastID is not (the
	// hub had not read that far when the listener joined, and the client
	// says it has it).
	maybeLive map[uint64]bool
	sentLive  map[uint64]bool
	page      []*app.Event
	done      bool
}

// startResume prepares the resume after lastID up to high, the hub's
// cursor when l joined; events above high come live (under the hub's mu).
func (l *Listener) startResume(lastID, high uint64, missing map[uint64]*streamGap, now time.Time) {
	r := &streamResume{lastID: lastID, after: lastID, until: high, since: now.Add(-l.hub.Resume)}
	if high > lastID && high-lastID > uint64(l.hub.ResumeMax) {
		r.after = high - uint64(l.hub.ResumeMax) // at most ResumeMax seqs, so at most ResumeMax events
		r.cutShort = true
	}
	r.maybeLive, r.sentLive = make(map[uint64]bool, len(missing)), map[uint64]bool{}
	for s := range missing {
		r.maybeLive[s] = true
	}
	l.resume = r
}

// push queues it; false when l is past its bounds and is dropped (its
// queue freed) or has ended. An empty queue takes any event, however
// large: the bound is on what waits behind the one being written.
func (l *Listener) push(it *streamItem) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.dropped || l.ended {
		return false
	}
	if len(l.queue) >= l.hub.Queue || len(l.queue) > 0 && l.bytes+it.size > int64(l.hub.QueueBytes) {
		l.freeLocked()
		l.dropped = true
	} else {
		l.queue = append(l.queue, it)
		l.bytes += it.size
		l.hub.hold(it)
	}
	l.wakeUp()
	return !l.dropped
}

// drop drops l (the hub's budget is spent and l is the furthest behind).
func (l *Listener) drop() {
	l.mu.Lock()
	l.freeLocked()
	l.dropped = true
	l.mu.Unlock()
	l.wakeUp()
}

// oldest returns the order of the oldest event l's queue holds; ok is
// false when it holds none.
func (l *Listener) oldest() (order uint64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.queue) == 0 {
		return 0, false
	}
	return l.queue[0].order, true
}

// freeLocked empties the queue (under mu).
func (l *Listener) freeLocked() {
	for _, it := range l.queue {
		l.hub.release(it)
	}
	l.queue, l.bytes = nil, 0
}

// wakeUp tells Next something changed.
func (l *Listener) wakeUp() {
	select {
	case l.signal <- struct{}{}:
	default:
	}
}

// end marks l ended by the hub's Close.
func (l *Listener) end() {
	l.mu.Lock()
	l.ended = true
	l.freeLocked()
	l.mu.Unlock()
	l.wakeUp()
}

// Next returns the next message: the resume's events and notices, the
// ready notice, then live events as they come. A listener that fell
// behind gets a dropped notice, then ErrClosed, as at the hub's
// Close; ctx's error when ctx is done first (Next may be called again).
func (l *Listener) Next(ctx context.Context) (Message, error) {
	if r := l.resume; r != nil && !r.done {
		m, ok, err := l.nextResumed(ctx, r)
		if err != nil || ok {
			return m, err
		}
	}
	if l.unknown != nil {
		n := l.unknown
		l.unknown = nil
		return Message{Notice: n}, nil
	}
	if l.readyPending {
		l.readyPending = false
		return Message{Notice: &app.StreamNotice{Kind: app.StreamNoticeReady, Message: "live from here on"}}, nil
	}
	for {
		l.mu.Lock()
		dropped, ended := l.dropped, l.ended
		var e *app.Event
		if !dropped && !ended && len(l.queue) > 0 {
			it := l.queue[0]
			l.queue[0] = nil
			l.queue = l.queue[1:]
			l.bytes -= it.size
			l.hub.release(it)
			e = it.e
		}
		l.mu.Unlock()
		switch {
		case ended:
			return Message{}, ErrClosed
		case dropped && !l.told:
			l.told = true
			return Message{Notice: &app.StreamNotice{Kind: app.StreamNoticeDropped, Message: fmt.Sprintf(
				"this listener fell more than %d events or %d bytes behind (or furthest behind when the server's listeners held %d bytes) and is dropped; reconnect with Last-Event-ID to resume",
				l.hub.Queue, l.hub.QueueBytes, l.hub.HubBytes)}}, nil
		case dropped:
			return Message{}, ErrClosed
		case e != nil:
			if r := l.resume; r != nil && (r.sentLive[e.Seq] || e.Seq <= r.lastID && !r.maybeLive[e.Seq]) {
				delete(r.sentLive, e.Seq) // the resume sent it already, or the client had it
				continue
			}
			return Message{Event: e}, nil
		}
		select {
		case <-l.signal:
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// nextResumed returns the resume's next message; ok is false once it has
// none left.
func (l *Listener) nextResumed(ctx context.Context, r *streamResume) (Message, bool, error) {
	for {
		if len(r.page) > 0 {
			e := r.page[0]
			r.page[0] = nil
			r.page = r.page[1:]
			r.after = e.Seq
			if e.ReceivedAt.Before(r.since) {
				r.skipped++
				continue
			}
			if !l.filter.Match(e) {
				continue
			}
			if r.maybeLive[e.Seq] {
				r.sentLive[e.Seq] = true
			}
			r.sent++
			return Message{Event: e}, true, nil
		}
		if r.after >= r.until {
			r.done = true
			return l.gapNotice(ctx, r)
		}
		es, err := l.hub.store.EventsAfter(ctx, r.after, min(streamPage, int(min(r.until-r.after, streamPage))), streamPageBytes)
		if err != nil {
			return Message{}, false, fmt.Errorf("stream: resume after %d: %w", r.after, err)
		}
		for len(es) > 0 && es[len(es)-1].Seq > r.until {
			es = es[:len(es)-1]
		}
		if len(es) == 0 {
			r.after = r.until
			continue
		}
		r.page = es
	}
}

// gapNotice returns the gap notice once the resume is sent, when events
// after Last-Event-ID were left out.
func (l *Listener) gapNotice(ctx context.Context, r *streamResume) (Message, bool, error) {
	skipped := r.skipped
	if r.cutShort {
		// Seqs (lastID, first read] were not read: is any event there?
		es, err := l.hub.store.EventsAfter(ctx, r.lastID, 1, streamPageBytes)
		if err != nil {
			return Message{}, false, fmt.Errorf("stream: resume after %d: %w", r.lastID, err)
		}
		if len(es) == 0 || es[0].Seq > r.until-uint64(l.hub.ResumeMax) {
			r.cutShort = false
		}
	}
	if skipped == 0 && !r.cutShort {
		return Message{}, false, nil
	}
	msg := fmt.Sprintf("events after %d older than %s or beyond the newest %d were not sent", r.lastID, l.hub.Resume, l.hub.ResumeMax)
	if skipped > 0 && !r.cutShort {
		msg = fmt.Sprintf("%d events after %d were older than %s and were not sent", skipped, r.lastID, l.hub.Resume)
	}
	return Message{Notice: &app.StreamNotice{Kind: app.StreamNoticeGap, Message: msg}}, true, nil
}

// Close disconnects l and frees its queue; it may be called more than
// once.
func (l *Listener) Close() {
	l.closeOnce.Do(func() {
		l.hub.remove(l)
		l.mu.Lock()
		l.freeLocked()
		l.mu.Unlock()
	})
}

// Ready reports whether Next has a message without waiting for a new
// event (a writer flushes once it has none).
func (l *Listener) Ready() bool {
	if l.readyPending || l.unknown != nil || l.resume != nil && !l.resume.done {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue) > 0 || l.dropped || l.ended
}
