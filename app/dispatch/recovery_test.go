package dispatch_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
)

// gate is a destination that answers 503 until opened, then 200 (but
// always 500 to a body containing "reject"), and records when requests
// came and how many were in flight at once.
type gate struct {
	*httptest.Server
	open              atomic.Bool
	inflight, most    atomic.Int64
	mu                sync.Mutex
	at                []time.Time
	delivered         map[string]bool
	whileClosedBodies []string
	// answered is closed, and replaced, after each answer it gave.
	answered chan struct{}
}

func newGate(t *testing.T) *gate {
	g := &gate{delivered: map[string]bool{}, answered: make(chan struct{})}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := g.inflight.Add(1)
		defer g.inflight.Add(-1)
		for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
		}
		body, _ := io.ReadAll(r.Body)
		time.Sleep(5 * time.Millisecond) // long enough for overlapping requests to show
		g.mu.Lock()
		defer g.mu.Unlock()
		defer func() { close(g.answered); g.answered = make(chan struct{}) }()
		g.at = append(g.at, time.Now())
		switch {
		case strings.Contains(string(body), "reject"):
			w.WriteHeader(500)
		case g.open.Load():
			g.delivered[r.Header.Get("X-GitHub-Delivery")] = true
		default:
			g.whileClosedBodies = append(g.whileClosedBodies, string(body))
			w.WriteHeader(503)
		}
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *gate) requests() int { g.mu.Lock(); defer g.mu.Unlock(); return len(g.at) }

// missing returns how many of ids were not delivered yet, and a channel
// closed at the gate's next answer.
func (g *gate) missing(ids []string) (n int, next <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	next = g.answered
	for _, id := range ids {
		if !g.delivered[id] {
			n++
		}
	}
	return n, next
}

// waitRequests waits until g has answered n requests, at most within.
func (g *gate) waitRequests(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		g.mu.Lock()
		got, next := len(g.at), g.answered
		g.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("the gate answered %d requests in %v; want %d", got, within, n)
		}
	}
}

// openUntilDelivered opens g and waits until every event of ids is
// delivered, at most 60 s: how long it took.
func (g *gate) openUntilDelivered(t *testing.T, ids []string) time.Duration {
	t.Helper()
	g.open.Store(true)
	opened := time.Now()
	deadline := time.NewTimer(60 * time.Second)
	defer deadline.Stop()
	for n, next := g.missing(ids); n > 0; n, next = g.missing(ids) {
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("%d of %d events not delivered 60 s after the destination answered again", n, len(ids))
		}
	}
	return time.Since(opened)
}

// gaps returns the time between each two of at, rounded to 10 ms.
func gaps(at []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(at); i++ {
		out = append(out, at[i].Sub(at[i-1]).Round(10*time.Millisecond))
	}
	return out
}

// recoveryConfig routes gh to the gate with retry and concurrency.
func recoveryConfig(url, retry string, concurrency int) string {
	return faultConfig(faultDest{name: "app", url: url, timeout: "2s", retry: retry, concurrency: concurrency})
}

// sendAll sends n events named prefix-i and returns their ids.
func sendAll(t *testing.T, h *harness, prefix string, n int) []string {
	var ids []string
	for i := range n {
		id := fmt.Sprint(prefix, "-", i)
		h.send(t, id, fmt.Sprintf(`{"n": %d}`, i))
		ids = append(ids, id)
	}
	return ids
}

// waitAttempted waits until every event's delivery has an attempt.
func waitAttempted(t *testing.T, h *harness, ids []string) {
	t.Helper()
	for _, id := range ids {
		h.waitState(t, id, 0, app.Pending)
		h.waitAttempts(t, id, 0, 1)
	}
}

// A destination that was down and answers again: a probe finds out, and
// its waiting retries go out at once instead of at their 5-minute step.
func TestDispatcher_RecoveryPullsRetriesForward(t *testing.T) {
	g := newGate(t)
	h := newHarness(t, recoveryConfig(g.URL, `["5m", "30m"]`, 4))
	h.disp.ProbeEvery = 300 * time.Millisecond
	ids := sendAll(t, h, "rec", 40)
	waitAttempted(t, h, ids)
	took := g.openUntilDelivered(t, ids)
	t.Logf("40 waiting retries delivered %v after the destination answered again", took.Round(time.Millisecond))
	if m := g.most.Load(); m > 4 {
		t.Fatalf("%d requests at once; the destination's concurrency is 4", m)
	}
	for _, id := range ids {
		if d := h.waitState(t, id, 0, app.Delivered); d.Tries != 1 {
			t.Fatalf("%s: %+v; want it delivered at its first retry step", id, d)
		}
	}
}

// While a destination fails, it is probed with one waiting delivery at a
// time, at most every ProbeEvery (longer after each failed probe, up to
// ProbeMax); a failed probe keeps the delivery's place in its schedule.
func TestDispatcher_ProbesWhileFailing(t *testing.T) {
	g := newGate(t)
	h := newHarness(t, recoveryConfig(g.URL, `["1h", "2h"]`, 4))
	h.disp.ProbeEvery, h.disp.ProbeMax = 200*time.Millisecond, 800*time.Millisecond
	ids := sendAll(t, h, "probe", 5)
	waitAttempted(t, h, ids)
	before := map[string]*app.Delivery{}
	for _, id := range ids {
		before[id] = h.deliveries(t, id)[0]
	}
	first := g.requests()
	// The spacing of probes in real time is what this test is about (the
	// schedule itself is checked on a fake clock by
	// TestDispatcher_ProbeKeepsScheduleAndNumber): five probes, 0.2, 0.4,
	// 0.8 and 0.8 s apart, come in about 3 s.
	const want = 5
	g.waitRequests(t, first+want, 20*time.Second)
	g.mu.Lock()
	probes := append([]time.Time(nil), g.at[first:first+want]...)
	bodies := append([]string(nil), g.whileClosedBodies[first:first+want]...)
	g.mu.Unlock()
	gaps := gaps(probes)
	t.Logf("%d probes, gaps %v", len(probes), gaps)
	for _, g := range gaps {
		if g < 190*time.Millisecond {
			t.Fatalf("probes %v apart: gaps %v", g, gaps)
		}
	}
	if gaps[len(gaps)-1] < 700*time.Millisecond {
		t.Fatalf("gaps %v; want them to grow to 800 ms", gaps)
	}
	if m := g.most.Load(); m > 4 {
		t.Fatalf("%d requests at once", m)
	}
	// One at a time, each delivery in turn.
	seen := map[string]bool{}
	for _, b := range bodies {
		seen[b] = true
	}
	if len(seen) != 5 {
		t.Fatalf("the first five probes sent %v; want each waiting delivery once", bodies)
	}
	for _, id := range ids {
		d := h.deliveries(t, id)[0]
		if d.State != app.Pending || d.Tries != before[id].Tries || !d.Due.Equal(before[id].Due) {
			t.Fatalf("%s after probes: %+v; before %+v: a probe must keep its step and due time", id, d, before[id])
		}
	}
}

// One payload the destination keeps rejecting does not hide that it is
// back: the others waiting behind it go out early all the same.
func TestDispatcher_RecoveryPastARejectedPayload(t *testing.T) {
	g := newGate(t)
	h := newHarness(t, recoveryConfig(g.URL, `["5m", "30m"]`, 2))
	h.disp.ProbeEvery = 300 * time.Millisecond
	h.send(t, "bad-1", `{"reject": true}`)
	waitAttempted(t, h, []string{"bad-1"})
	ids := sendAll(t, h, "good", 20)
	waitAttempted(t, h, ids)
	g.openUntilDelivered(t, ids)
	if d := h.deliveries(t, "bad-1")[0]; d.State != app.Pending || d.Tries != 1 {
		t.Fatalf("the rejected one: %+v; want it pending at its first step", d)
	}
}
