package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
	"hookbox/app/stream"
)

// commitLog is a store's committed events in the order a test commits
// them, seqs chosen by the test: it models PostgreSQL, where a seq is
// handed out before its commit, so seq 4 may become visible after 5.
type commitLog struct {
	mu     sync.Mutex
	events map[uint64]*app.Event
	reads  int           // EventsAfter and Event calls
	read   chan struct{} // cap 1: an EventsAfter call began
}

func newCommitLog() *commitLog {
	return &commitLog{events: map[uint64]*app.Event{}, read: make(chan struct{}, 1)}
}

// nextRead waits until the hub reads the log after this call: what was
// committed before it is then seen.
func (c *commitLog) nextRead() {
	select {
	case <-c.read: // a read that may have begun before
	default:
	}
	<-c.read
}

func (c *commitLog) commit(seq uint64, source, topic string, at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.events[seq] = &app.Event{Seq: seq, Source: source, ID: fmt.Sprint("evt_", seq), Topic: topic, ReceivedAt: at, Body: []byte(fmt.Sprintf(`{"n":%d}`, seq))}
}

func (c *commitLog) sorted() []uint64 {
	seqs := make([]uint64, 0, len(c.events))
	for s := range c.events {
		seqs = append(seqs, s)
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs
}

func (c *commitLog) EventsAfter(ctx context.Context, after uint64, limit, maxBytes int) ([]*app.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	select {
	case c.read <- struct{}{}:
	default:
	}
	var out []*app.Event
	size := 0
	for _, s := range c.sorted() {
		if s > after && len(out) < limit && size < maxBytes {
			out = append(out, c.events[s])
			size += len(c.events[s].Body)
		}
	}
	return out, nil
}

func (c *commitLog) Event(ctx context.Context, seq uint64) (*app.Event, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reads++
	return c.events[seq], nil
}

func (c *commitLog) ListEvents(ctx context.Context, q app.EventQuery) ([]app.EventSummary, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	seqs := c.sorted()
	if len(seqs) == 0 {
		return nil, 0, nil
	}
	return []app.EventSummary{{Seq: seqs[len(seqs)-1]}}, 0, nil
}

func (c *commitLog) readCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var streamT0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// newTestHub returns a hub over log that polls only when the test says so
// (PollStream), on a clock the test moves.
func newTestHub(t *testing.T, log *commitLog) (*stream.Hub, *testClock) {
	clock := &testClock{now: streamT0}
	h := stream.NewHub(log)
	h.Poll = time.Hour
	h.Now = clock.Now
	t.Cleanup(h.Close)
	return h, clock
}

// next returns l's next message as "seq" or "notice:kind", failing t
// after a minute.
func next(t *testing.T, l *stream.Listener) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m, err := l.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if m.Notice != nil {
		return "notice:" + m.Notice.Kind
	}
	return fmt.Sprint(m.Event.Seq)
}

// nextN returns l's next n messages.
func nextN(t *testing.T, l *stream.Listener, n int) []string {
	t.Helper()
	var out []string
	for range n {
		out = append(out, next(t, l))
	}
	return out
}

func subscribe(t *testing.T, h *stream.Hub, key string, f stream.Filter, resume bool, last uint64) *stream.Listener {
	t.Helper()
	l, err := h.Subscribe(context.Background(), key, f, resume, last)
	if err != nil {
		t.Fatalf("Subscribe: %v", err)
	}
	t.Cleanup(l.Close)
	return l
}

func wantMessages(t *testing.T, what string, got []string, want ...string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s got %v, want %v", what, got, want)
	}
}

func TestStreamHub_FanOutAndFilters(t *testing.T) {
	log := newCommitLog()
	log.commit(1, "shop", "orders/create", streamT0) // before anyone listens: not sent
	h, _ := newTestHub(t, log)
	all := subscribe(t, h, "ann", stream.Filter{}, false, 0)
	shop := subscribe(t, h, "bob", stream.Filter{Source: "shop"}, false, 0)
	orders := subscribe(t, h, "cy", stream.Filter{Topic: "orders/*"}, false, 0)
	log.commit(2, "shop", "orders/create", streamT0)
	log.commit(3, "stripe", "orders/paid", streamT0)
	log.commit(4, "shop", "products/update", streamT0)
	log.commit(5, "shopify", "orders/create", streamT0) // not "shop"
	stream.Poll(h)
	wantMessages(t, "all", nextN(t, all, 5), "notice:ready", "2", "3", "4", "5")
	wantMessages(t, "source=shop", nextN(t, shop, 3), "notice:ready", "2", "4")
	wantMessages(t, "topic=orders/*", nextN(t, orders, 4), "notice:ready", "2", "3", "5")
}

// Seqs that commit out of order are sent when they show up; one that never
// does is given up after GapWait, and the gap costs a few point reads.
func TestStreamHub_Gaps(t *testing.T) {
	log := newCommitLog()
	h, clock := newTestHub(t, log)
	l := subscribe(t, h, "ann", stream.Filter{}, false, 0)
	wantMessages(t, "start", nextN(t, l, 1), "notice:ready")
	log.commit(1, "shop", "a", streamT0)
	log.commit(3, "shop", "a", streamT0) // 2 is still committing
	stream.Poll(h)
	wantMessages(t, "first poll", nextN(t, l, 2), "1", "3")
	log.commit(2, "shop", "a", streamT0)
	clock.add(h.GapStep())
	stream.Poll(h)
	wantMessages(t, "late commit", nextN(t, l, 1), "2")

	// 4 never commits (a duplicate's seq, a rollback).
	log.commit(5, "shop", "a", streamT0)
	stream.Poll(h)
	wantMessages(t, "after a hole", nextN(t, l, 1), "5")
	before := log.readCount()
	start := clock.Now()
	polls := 0
	for clock.Now().Before(start.Add(h.GapWait)) {
		clock.add(h.GapStep()) // a poll every GapStep, as StreamPoll by default
		stream.Poll(h)
		polls++
	}
	if reads := log.readCount() - before; reads > polls+8 {
		t.Errorf("%d reads over %d polls for one gap; want one read per poll and a few re-reads", reads, polls)
	} else {
		t.Logf("one gap over %s: %d reads in %d polls (%d of them re-reads of the gap)", h.GapWait, reads, polls, reads-polls)
	}
	log.commit(4, "shop", "a", streamT0) // too late: given up
	log.commit(6, "shop", "a", streamT0)
	clock.add(h.GapStep())
	stream.Poll(h)
	wantMessages(t, "after giving up", nextN(t, l, 1), "6")
}

// A listener that stops reading is dropped, with a notice, while the
// others go on; the hub keeps nothing of it.
func TestStreamHub_SlowListenerDropped(t *testing.T) {
	log := newCommitLog()
	h, _ := newTestHub(t, log)
	h.Queue = 4
	fast := subscribe(t, h, "ann", stream.Filter{}, false, 0)
	slow := subscribe(t, h, "bob", stream.Filter{}, false, 0)
	wantMessages(t, "fast", nextN(t, fast, 1), "notice:ready")
	for i := uint64(1); i <= 12; i += 2 {
		log.commit(i, "shop", "a", streamT0)
		log.commit(i+1, "shop", "a", streamT0)
		stream.Poll(h)
		wantMessages(t, "fast", nextN(t, fast, 2), fmt.Sprint(i), fmt.Sprint(i+1))
	}
	wantMessages(t, "slow", nextN(t, slow, 2), "notice:ready", "notice:dropped")
	if _, err := slow.Next(context.Background()); !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("Next after the dropped notice = %v; want ErrStreamClosed", err)
	}
	if n := h.Listeners(); n != 1 {
		t.Fatalf("Listeners = %d after a drop; want 1", n)
	}

	t.Run("Bytes", func(t *testing.T) {
		h, _ := newTestHub(t, log)
		h.QueueBytes = 20 // less than an event holds: the second does not fit
		l := subscribe(t, h, "ann", stream.Filter{}, false, 0)
		for s := uint64(13); s <= 15; s++ {
			log.commit(s, "shop", "a", streamT0)
		}
		stream.Poll(h)
		wantMessages(t, "over the bytes", nextN(t, l, 2), "notice:ready", "notice:dropped")
	})
}

// commitSized commits seq with a body of size bytes, and returns what the
// event holds (stream.EventMemory).
func (c *commitLog) commitSized(seq uint64, size int) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := &app.Event{Seq: seq, Source: "shop", ID: fmt.Sprint("evt_", seq), Topic: "a", ReceivedAt: streamT0, Body: make([]byte, size)}
	c.events[seq] = e
	return stream.EventMemory(e)
}

// The memory the listeners' queues hold is bounded in bytes: per listener
// (an event larger than the bound still goes to one with nothing queued)
// and for all of them together, each event counted once however many
// queues share it; past the hub's bound the listener furthest behind is
// dropped and the others go on.
func TestStreamHub_MemoryBounds(t *testing.T) {
	t.Run("LargeEvent", func(t *testing.T) {
		log := newCommitLog()
		h, _ := newTestHub(t, log)
		h.QueueBytes = 1 << 10
		l := subscribe(t, h, "ann", stream.Filter{}, false, 0)
		wantMessages(t, "ann", nextN(t, l, 1), "notice:ready")
		log.commitSized(1, 4<<10)
		stream.Poll(h)
		wantMessages(t, "an event larger than QueueBytes", nextN(t, l, 1), "1")
		if q := h.Queued(); q != 0 {
			t.Fatalf("Queued = %d once the event is read; want 0", q)
		}
	})
	t.Run("Hub", func(t *testing.T) {
		log := newCommitLog()
		h, _ := newTestHub(t, log)
		const size = 64 << 10
		held := stream.EventMemory(&app.Event{Source: "shop", ID: "evt_1", Topic: "a", Body: make([]byte, size)}) // as events 1 to 9
		h.HubBytes = int(6 * held)
		fast := subscribe(t, h, "ann", stream.Filter{}, false, 0)
		behind := subscribe(t, h, "bob", stream.Filter{}, false, 0)  // reads nothing
		lagging := subscribe(t, h, "cat", stream.Filter{}, false, 0) // reads the first two
		wantMessages(t, "fast", nextN(t, fast, 1), "notice:ready")
		wantMessages(t, "lagging", nextN(t, lagging, 1), "notice:ready")
		log.commitSized(1, size)
		stream.Poll(h)
		if q := h.Queued(); q != held {
			t.Fatalf("Queued = %d with one event in three queues; want %d, the event once", q, held)
		}
		wantMessages(t, "fast", nextN(t, fast, 1), "1")
		wantMessages(t, "lagging", nextN(t, lagging, 1), "1")
		for s := uint64(2); s <= 12; s++ {
			log.commitSized(s, size)
			stream.Poll(h)
			wantMessages(t, "fast", nextN(t, fast, 1), fmt.Sprint(s))
			if s == 2 {
				wantMessages(t, "lagging", nextN(t, lagging, 1), "2")
			}
			if q := h.Queued(); q > int64(h.HubBytes) {
				t.Fatalf("Queued = %d after event %d; want at most HubBytes %d", q, s, h.HubBytes)
			}
			if want := map[uint64]int{6: 3, 7: 2, 8: 2, 9: 1}[s]; want != 0 && h.Listeners() != want {
				t.Fatalf("Listeners = %d after event %d; want %d (bob dropped at 7, cat at 9)", h.Listeners(), s, want)
			}
		}
		// bob, furthest behind, was dropped when the 7th event came (1 to 7
		// queued, over 6); cat when the 9th did (3 to 9).
		wantMessages(t, "bob", nextN(t, behind, 2), "notice:ready", "notice:dropped")
		wantMessages(t, "cat", nextN(t, lagging, 1), "notice:dropped")
		if n := h.Listeners(); n != 1 {
			t.Fatalf("Listeners = %d; want 1, the one that keeps up", n)
		}
		if q := h.Queued(); q != 0 {
			t.Fatalf("Queued = %d with only a listener that read everything; want 0", q)
		}
	})
}

func TestStreamHub_Resume(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		log := newCommitLog()
		for s := uint64(1); s <= 10; s++ {
			log.commit(s, "shop", "a", streamT0)
		}
		h, _ := newTestHub(t, log)
		l := subscribe(t, h, "ann", stream.Filter{}, true, 3)
		wantMessages(t, "resume after 3", nextN(t, l, 8), "4", "5", "6", "7", "8", "9", "10", "notice:ready")
		log.commit(11, "shop", "a", streamT0)
		stream.Poll(h)
		wantMessages(t, "live", nextN(t, l, 1), "11")
	})
	t.Run("TooMany", func(t *testing.T) {
		log := newCommitLog()
		for s := uint64(1); s <= 10; s++ {
			log.commit(s, "shop", "a", streamT0)
		}
		h, _ := newTestHub(t, log)
		h.ResumeMax = 3
		l := subscribe(t, h, "ann", stream.Filter{}, true, 2)
		wantMessages(t, "resume after 2, at most 3", nextN(t, l, 5), "8", "9", "10", "notice:gap", "notice:ready")
	})
	t.Run("TooOld", func(t *testing.T) {
		log := newCommitLog()
		for s := uint64(1); s <= 6; s++ {
			at := streamT0
			if s <= 4 {
				at = streamT0.Add(-app.StreamResume - time.Second)
			}
			log.commit(s, "shop", "a", at)
		}
		h, _ := newTestHub(t, log)
		l := subscribe(t, h, "ann", stream.Filter{}, true, 1)
		wantMessages(t, "resume after 1", nextN(t, l, 4), "5", "6", "notice:gap", "notice:ready")
	})
	t.Run("UnknownID", func(t *testing.T) {
		// A Last-Event-ID past the newest event (a reset store): a gap
		// notice, then every live event, none held back.
		log := newCommitLog()
		log.commit(1, "shop", "a", streamT0)
		h, _ := newTestHub(t, log)
		l := subscribe(t, h, "ann", stream.Filter{}, true, 5000)
		wantMessages(t, "an unknown id", nextN(t, l, 2), "notice:gap", "notice:ready")
		log.commit(2, "shop", "a", streamT0)
		stream.Poll(h)
		wantMessages(t, "live", nextN(t, l, 1), "2")
	})
	t.Run("Filtered", func(t *testing.T) {
		log := newCommitLog()
		log.commit(1, "shop", "a", streamT0)
		log.commit(2, "stripe", "a", streamT0)
		log.commit(3, "shop", "a", streamT0)
		h, _ := newTestHub(t, log)
		l := subscribe(t, h, "ann", stream.Filter{Source: "shop"}, true, 0)
		wantMessages(t, "resume of shop", nextN(t, l, 3), "1", "3", "notice:ready")
	})
}

// At the join of a resume and the live events, nothing is sent twice and
// nothing is missed, even when a seq the hub waits for commits in between.
func TestStreamHub_ResumeJoin(t *testing.T) {
	log := newCommitLog()
	h, clock := newTestHub(t, log)
	early := subscribe(t, h, "ann", stream.Filter{}, false, 0) // keeps the hub polling
	log.commit(1, "shop", "a", streamT0)
	log.commit(2, "shop", "a", streamT0)
	log.commit(3, "shop", "a", streamT0)
	log.commit(5, "shop", "a", streamT0) // 4 is committing
	stream.Poll(h)
	log.commit(4, "shop", "a", streamT0) // commits before the resume reads
	log.commit(6, "shop", "a", streamT0) // after the hub's last read
	l := subscribe(t, h, "bob", stream.Filter{}, true, 0)
	wantMessages(t, "resume", nextN(t, l, 6), "1", "2", "3", "4", "5", "notice:ready")
	clock.add(h.GapStep())
	stream.Poll(h) // reads 6, re-reads 4 and sends it live
	log.commit(7, "shop", "a", streamT0)
	stream.Poll(h)
	wantMessages(t, "live", nextN(t, l, 2), "6", "7")
	wantMessages(t, "the early listener", nextN(t, early, 8), "notice:ready", "1", "2", "3", "5", "4", "6", "7")
}

func TestStreamHub_Limits(t *testing.T) {
	h, _ := newTestHub(t, newCommitLog())
	h.PerUser, h.Max = 2, 3
	subscribe(t, h, "ann", stream.Filter{}, false, 0)
	a2 := subscribe(t, h, "ann", stream.Filter{}, false, 0)
	var le *stream.LimitError
	if _, err := h.Subscribe(context.Background(), "ann", stream.Filter{}, false, 0); !errors.As(err, &le) {
		t.Fatalf("third stream of ann: %v; want a StreamLimitError", err)
	}
	subscribe(t, h, "bob", stream.Filter{}, false, 0)
	if _, err := h.Subscribe(context.Background(), "cy", stream.Filter{}, false, 0); !errors.As(err, &le) {
		t.Fatalf("fourth stream on the node: %v; want a StreamLimitError", err)
	}
	a2.Close()
	subscribe(t, h, "ann", stream.Filter{}, false, 0)
}

// Close ends a Next that waits, and no poller runs once nobody listens.
func TestStreamHub_CloseAndIdle(t *testing.T) {
	log := newCommitLog()
	h, _ := newTestHub(t, log)
	l := subscribe(t, h, "ann", stream.Filter{}, false, 0)
	l.Close()
	<-stream.Stopped(h)
	reads := log.readCount()
	h.Wake()
	h.Wake()
	if got := log.readCount(); got != reads {
		t.Fatalf("%d reads while nobody listens", got-reads)
	}

	l = subscribe(t, h, "ann", stream.Filter{}, false, 0)
	wantMessages(t, "start", nextN(t, l, 1), "notice:ready")
	ended := make(chan error, 1)
	go func() {
		_, err := l.Next(context.Background())
		ended <- err
	}()
	h.Close()
	if err := <-ended; !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("Next at Close = %v; want ErrStreamClosed", err)
	}
	if _, err := h.Subscribe(context.Background(), "ann", stream.Filter{}, false, 0); !errors.Is(err, stream.ErrClosed) {
		t.Fatalf("Subscribe after Close = %v", err)
	}
}

// The stream leaves out every signature and credential (a viewer reads
// it), the hmac source's configured header included whatever its name,
// and says the provider and the hmac layout (never the secret).
func TestStreamEventOf_Headers(t *testing.T) {
	e := &app.Event{Seq: 7, Source: "erp", Header: []app.HeaderField{
		{Name: "X-Shopify-Hmac-Sha256", Value: "sig1"}, {Name: "Stripe-Signature", Value: "t=1,v1=ab"},
		{Name: "webhook-signature", Value: "v1,xyz"}, {Name: "X-Api-Key", Value: "secret-key"}, {Name: "Authorization", Value: "Bearer t"},
		{Name: "X-Auth-Token", Value: "secret-token"}, {Name: "X-Session-Id", Value: "s"}, {Name: "Content-Type", Value: "application/json"},
		{Name: "x-checksum", Value: "sha256=abcd"}, {Name: "Webhook-Id", Value: "msg_1"}, {Name: "Webhook-Timestamp", Value: "17"},
	}}
	src := &app.Source{Name: "erp", Provider: "hmac", Settings: provider.Settings{Secrets: [][]byte{[]byte("never-on-the-stream")},
		SignatureHeader: "X-Checksum", SignatureEncoding: "hex", SignaturePrefix: "sha256="}}
	se := app.StreamEventOf(e, src)
	var got []string
	for _, h := range se.Header {
		got = append(got, h[0]+"="+h[1])
	}
	want := []string{"Content-Type=application/json", "Webhook-Id=msg_1", "Webhook-Timestamp=17"}
	if !slices.Equal(got, want) {
		t.Fatalf("stream headers %v; want %v", got, want)
	}
	if se.Provider != "hmac" || se.Signature == nil || *se.Signature != (app.StreamSignature{Header: "X-Checksum", Encoding: "hex", Prefix: "sha256="}) {
		t.Fatalf("provider %q, signature %+v", se.Provider, se.Signature)
	}
	b, _ := json.Marshal(se)
	if strings.Contains(string(b), "never-on-the-stream") || strings.Contains(string(b), "abcd") {
		t.Fatalf("the stream event carries a secret or the signature: %s", b)
	}
	// A source no longer configured: by the name only, and no provider.
	if se := app.StreamEventOf(e, nil); se.Provider != "" || se.Signature != nil || len(se.Header) != 4 {
		t.Fatalf("without its source: %+v", se)
	}
}

// Listeners that join while events commit out of order, each resuming
// from a different seq, all get every event after their seq exactly once.
func TestStreamHub_JoinUnderLoad(t *testing.T) {
	log := newCommitLog()
	h := stream.NewHub(log)
	h.Poll = time.Millisecond
	t.Cleanup(h.Close)
	const total = 400
	keep := subscribe(t, h, "keep", stream.Filter{}, false, 0) // the hub polls throughout
	go func() {
		for range total { // drained, so it is never dropped
			if _, err := keep.Next(context.Background()); err != nil {
				return
			}
		}
	}()
	committed := make(chan uint64, total)
	go func() {
		// Pairs commit swapped: 2 before 1, 4 before 3…
		for s := uint64(1); s <= total; s += 2 {
			log.commit(s+1, "shop", "a", time.Now())
			committed <- s + 1
			log.commit(s, "shop", "a", time.Now())
			committed <- s
			if s%20 == 1 {
				log.nextRead() // let the hub read between bursts
			}
		}
	}()
	var wg sync.WaitGroup
	var last uint64
	for range 8 {
		// Join once 40 more events are in, resuming from a seq already
		// seen.
		for range 40 {
			last = <-committed
		}
		last := last - 3
		l := subscribe(t, h, fmt.Sprint("l", last), stream.Filter{}, true, last)
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[uint64]int{}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			below := 0
			for len(seen)-below < int(total-last) {
				m, err := l.Next(ctx)
				if err != nil {
					t.Errorf("listener after %d: %v with %d of %d", last, err, len(seen), total-last)
					return
				}
				// A seq at or below last comes only when the hub was
				// waiting for it at the join (it never sent it): once.
				if m.Event != nil {
					if seen[m.Event.Seq]++; seen[m.Event.Seq] > 1 {
						t.Errorf("listener after %d got %d twice", last, m.Event.Seq)
					}
					if m.Event.Seq <= last {
						below++
					}
				}
			}
		}()
	}
	wg.Wait()
}
