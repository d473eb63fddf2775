package dispatch_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/dispatch"
)

// fakeClock is a clock the test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// passAt wakes h's dispatcher and waits until a pass that began at now or
// later has ended: what that pass fired and started, it did at now (a pass
// already under way when the clock moved may have read an earlier time).
// A delivery it fired would no longer be pending, so a test that finds the
// pending delivery still there knows nothing went out.
func passAt(t *testing.T, h *harness, now time.Time) {
	t.Helper()
	passed := make(chan struct{})
	var once sync.Once
	dispatch.OnPass(h.disp, func(began time.Time) {
		if !began.Before(now) {
			once.Do(func() { close(passed) })
		}
	})
	defer dispatch.OnPass(h.disp, nil)
	h.disp.Wake()
	select {
	case <-passed:
	case <-time.After(10 * time.Second):
		t.Fatalf("no dispatcher pass at %v within 10s", now)
	}
}

// debounceConfig routes gh push events to one sink, debounced per customer.
func debounceConfig(url, debounce, rateLimit string) string {
	c := fmt.Sprintf(`
[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"
[[destination]]
name = "pos"
url = %q
retry = ["1h"]
[[route]]
name = "customers"
source = "gh"
key = "{body.customer.id}"
debounce = %q
to = ["pos"]
`, url, debounce)
	if rateLimit != "" {
		c += fmt.Sprintf("rate_limit = %q\n", rateLimit)
	}
	return c
}

func update(customer string, n int) string {
	return fmt.Sprintf(`{"customer": {"id": %q}, "n": %d}`, customer, n)
}

// waitRequests waits until the sink got n requests, then checks no more come.
func (s *sink) waitRequests(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
wait:
	for s.requests() < n {
		select {
		case <-s.hits: // each answer the sink gave
		case <-deadline.C:
			break wait
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.got) != n {
		t.Fatalf("sink got %d requests, want %d", len(s.got), n)
	}
	var bodies []string
	for _, b := range s.bodys {
		bodies = append(bodies, string(b))
	}
	return bodies
}

func TestDebounce_OneCustomerBurst(t *testing.T) {
	s := newSink(t, 200)
	clk := &fakeClock{t: now0}
	h := newHarnessAt(t, debounceConfig(s.URL, "10s", ""), t.TempDir(), clk.Now)
	for i := range 100 {
		h.send(t, fmt.Sprint("u-", i), update("c1", i))
		clk.Add(50 * time.Millisecond) // 100 updates within 5s, inside one 10s window
	}
	if n, _ := h.db.PendingCount(context.Background()); n != 1 {
		t.Fatalf("pending = %d, want 1", n)
	}
	if got := s.requests(); got != 0 {
		t.Fatalf("sent %d before the window passed", got)
	}
	clk.Add(6 * time.Second)
	h.disp.Wake()
	bodies := s.waitRequests(t, 1)
	if bodies[0] != update("c1", 99) {
		t.Fatalf("delivered %s, want the last body", bodies[0])
	}
	if rec, deb, fired := routeCount(t, h, app.RouteReceived), routeCount(t, h, app.RouteMerged), routeCount(t, h, app.RouteSent); rec != 100 || deb != 99 || fired != 1 {
		t.Fatalf("stats received %d debounced %d fired %d", rec, deb, fired)
	}
	// The delivered event records the 99 it replaced (up to the kept bound).
	_, seq, _, _ := h.db.LookupID(context.Background(), "gh", "u-99")
	if merged, _ := h.db.MergedInto(context.Background(), seq); len(merged) != 99 {
		t.Fatalf("merged = %d, want 99", len(merged))
	}
	// The key is free again: the next update opens a new window.
	h.send(t, "u-next", update("c1", 100))
	clk.Add(11 * time.Second)
	h.disp.Wake()
	if bodies := s.waitRequests(t, 2); bodies[1] != update("c1", 100) {
		t.Fatalf("second window delivered %s", bodies[1])
	}
}

func TestDebounce_InterleavedCustomers(t *testing.T) {
	s := newSink(t, 200)
	clk := &fakeClock{t: now0}
	h := newHarnessAt(t, debounceConfig(s.URL, "10s", ""), t.TempDir(), clk.Now)
	for i := range 30 {
		c := fmt.Sprint("c", i%3)
		h.send(t, fmt.Sprint("u-", i), update(c, i))
		clk.Add(100 * time.Millisecond)
	}
	clk.Add(10 * time.Second)
	h.disp.Wake()
	bodies := s.waitRequests(t, 3)
	want := map[string]bool{update("c0", 27): true, update("c1", 28): true, update("c2", 29): true}
	for _, b := range bodies {
		if !want[b] {
			t.Fatalf("delivered %s; want the latest of each customer", b)
		}
		delete(want, b)
	}
}

// rate_limit 5 per 60s (the test's minute): the 6th distinct burst in the
// window waits for a slot, then goes out with what merged into it.
func TestDebounce_RateLimitDefers(t *testing.T) {
	s := newSink(t, 200)
	clk := &fakeClock{t: now0}
	h := newHarnessAt(t, strings.Replace(debounceConfig(s.URL, "1s", "5/1m"), `key = "{body.customer.id}"`, `key = "{body.shop}"`, 1), t.TempDir(), clk.Now)
	shopUpdate := func(n int) string { return fmt.Sprintf(`{"shop": "s1", "n": %d}`, n) }
	for burst := range 5 { // five bursts, each fired after its 1s window
		h.send(t, fmt.Sprint("b-", burst), shopUpdate(burst))
		clk.Add(2 * time.Second)
		h.disp.Wake()
		s.waitRequests(t, burst+1)
	}
	// The 6th burst at t=10s: the window (0s..60s) is full.
	h.send(t, "b-5", shopUpdate(5))
	clk.Add(time.Second)
	h.send(t, "b-5b", shopUpdate(6)) // merges into the deferred delivery
	if def, deb := routeCount(t, h, app.RouteDeferred), routeCount(t, h, app.RouteMerged); def != 1 || deb != 1 {
		t.Fatalf("deferred %d, debounced %d; want 1, 1", def, deb)
	}
	clk.Add(30 * time.Second) // t=41s: still inside the window
	passAt(t, h, clk.Now())
	if n, _ := h.db.PendingCount(context.Background()); n != 1 {
		t.Fatalf("pending = %d after a pass while the window was full, want 1", n)
	}
	if got := s.requests(); got != 5 {
		t.Fatalf("sent %d while the window was full, want 5", got)
	}
	clk.Add(20 * time.Second) // t=61s: the first send left the window
	h.disp.Wake()
	if bodies := s.waitRequests(t, 6); bodies[5] != shopUpdate(6) {
		t.Fatalf("deferred delivery carried %s, want the latest", bodies[5])
	}
}

func TestDebounce_ConcurrentSameKey(t *testing.T) {
	s := newSink(t, 200)
	h := newHarness(t, debounceConfig(s.URL, "1h", ""))
	var wg sync.WaitGroup
	for i := range 50 {
		in := apptest.Signed(t, "github", "gh-secret", []byte(update("c9", i)), "", fmt.Sprint("cc-", i), "push", time.Now())
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.recv.Receive(context.Background(), "gh", in); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n, _ := h.db.PendingCount(context.Background()); n != 1 {
		t.Fatalf("pending = %d, want 1", n)
	}
	if deb := routeCount(t, h, app.RouteMerged); deb != 49 {
		t.Fatalf("debounced = %d, want 49", deb)
	}
}

func TestDebounce_SurvivesRestart(t *testing.T) {
	s := newSink(t, 200)
	dir := t.TempDir()
	clk := &fakeClock{t: now0}
	h := newHarnessAt(t, debounceConfig(s.URL, "10s", ""), dir, clk.Now)
	h.send(t, "r-1", update("c1", 1))
	h.send(t, "r-2", update("c1", 2))
	h.stop()

	clk.Add(5 * time.Second)
	h = newHarnessAt(t, debounceConfig(s.URL, "10s", ""), dir, clk.Now)
	if n, _ := h.db.PendingCount(context.Background()); n != 1 {
		t.Fatalf("pending after restart = %d, want 1", n)
	}
	passAt(t, h, clk.Now())
	if n, _ := h.db.PendingCount(context.Background()); n != 1 || s.requests() != 0 {
		t.Fatalf("fired before its due time: pending %d, sent %d", n, s.requests())
	}
	clk.Add(6 * time.Second)
	h.disp.Wake()
	if bodies := s.waitRequests(t, 1); bodies[0] != update("c1", 2) {
		t.Fatalf("delivered %s", bodies[0])
	}
}

func TestDebounce_MissingKeySentAtOnce(t *testing.T) {
	s := newSink(t, 200)
	h := newHarness(t, debounceConfig(s.URL, "1h", ""))
	h.send(t, "nokey", `{"no": "customer"}`)
	s.waitRequests(t, 1)
	if unkeyed := routeCount(t, h, app.RouteUnkeyed); unkeyed != 1 {
		t.Fatalf("unkeyed = %d, want 1", unkeyed)
	}
}

// burstTrace generates a realistic Shopify-like customers/update trace:
// creations that emit 2-5 updates within a few seconds, and later single
// edits, spread over the period.
func burstTrace(r *rand.Rand, customers int, period time.Duration) []struct {
	at       time.Duration
	customer string
} {
	var trace []struct {
		at       time.Duration
		customer string
	}
	add := func(at time.Duration, c string) {
		trace = append(trace, struct {
			at       time.Duration
			customer string
		}{at, c})
	}
	for c := range customers {
		id := fmt.Sprint("cust-", c)
		start := time.Duration(r.Int64N(int64(period)))
		for range 2 + r.IntN(4) { // creation: 2-5 updates within 3s
			add(start+time.Duration(r.Int64N(int64(3*time.Second))), id)
		}
		for range r.IntN(3) { // 0-2 edits later, each a single update
			add(start+time.Minute+time.Duration(r.Int64N(int64(period))), id)
		}
	}
	sort.Slice(trace, func(i, j int) bool { return trace[i].at < trace[j].at })
	return trace
}

func TestDebounce_BurstTraceReduction(t *testing.T) {
	s := newSink(t, 200)
	clk := &fakeClock{t: now0}
	h := newHarnessAt(t, debounceConfig(s.URL, "5s", ""), t.TempDir(), clk.Now)
	trace := burstTrace(rand.New(rand.NewPCG(1, 2)), 200, 30*time.Minute)
	var elapsed time.Duration
	for i, ev := range trace {
		clk.Add(ev.at - elapsed)
		elapsed = ev.at
		h.disp.Wake()
		h.send(t, fmt.Sprint("t-", i), update(ev.customer, i))
	}
	clk.Add(time.Minute)
	// Every window has ended by the clock: the passes at it fire them all.
	for range 100 {
		if n, _ := h.db.PendingCount(context.Background()); n == 0 {
			break
		}
		passAt(t, h, clk.Now())
	}
	fired := int(routeCount(t, h, app.RouteSent))
	if fired == 0 || fired >= len(trace) {
		t.Fatalf("fired %d for %d events", fired, len(trace))
	}
	t.Logf("burst trace: %d updates, %d deliveries, reduction %.1f%%", len(trace), fired, 100*(1-float64(fired)/float64(len(trace))))
}

// routeCount is the store's count of kind for the route "customers", all
// hours: what the overview's debounced-routes table shows.
func routeCount(t *testing.T, h *harness, kind app.NameKind) uint64 {
	t.Helper()
	c, err := h.db.NamedCounts(context.Background(), time.Unix(0, 0), time.Now().AddDate(100, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return c[app.Named{Kind: kind, Name: "customers"}]
}
