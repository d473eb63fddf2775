package dispatch_test

// What the dispatcher's tests share: a sink that answers by plan and a
// harness that runs a receiver and a dispatcher over a real bbolt file.

import (
	"context"
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
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/dispatch"
	"hookbox/app/httpsend"
	"hookbox/app/receive"
	"hookbox/storage/bboltstore"
)

const destSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// sink is a destination that answers with the codes its plan gives, in
// order (the last one repeats), and records every request.
type sink struct {
	*httptest.Server
	mu    sync.Mutex
	plan  []int
	got   []*http.Request
	bodys [][]byte
	hits  chan struct{}
}

func newSink(t *testing.T, plan ...int) *sink {
	s := &sink{plan: plan, hits: make(chan struct{}, 1000)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		n := len(s.got)
		s.got = append(s.got, r)
		s.bodys = append(s.bodys, body)
		code := s.plan[min(n, len(s.plan)-1)]
		s.mu.Unlock()
		if code == 429 {
			w.Header().Set("Retry-After", "1")
		}
		w.WriteHeader(code)
		fmt.Fprintf(w, "answer %d to attempt %d", code, n+1)
		s.hits <- struct{}{}
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *sink) setPlan(plan ...int) {
	s.mu.Lock()
	s.plan, s.got, s.bodys = plan, nil, nil
	s.mu.Unlock()
}
func (s *sink) requests() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.got) }

// harness runs a receiver and a dispatcher over a real bbolt file.
type harness struct {
	cfg  *app.Config
	db   *bboltstore.DB
	recv *receive.Receiver
	disp *dispatch.Dispatcher
	// stopRun ends the dispatcher's Run; cancelSends then cuts the sends
	// still in flight, as serve does at the end of its shutdown grace.
	stopRun, cancelSends func()
	stop                 func() // Run ended, sends finished, file closed
	// changed is closed, and replaced, each time the dispatcher recorded
	// a batch of attempts or a commit opened deliveries: waits re-check then.
	changedMu sync.Mutex
	changed   chan struct{}
}

// signal wakes the waits of waitFor.
func (h *harness) signal() {
	h.changedMu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.changedMu.Unlock()
}

// waitFor waits until cond holds, checking it again each time the
// dispatcher recorded attempts or deliveries were opened, for at most
// within; it reports whether cond held.
func (h *harness) waitFor(within time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		h.changedMu.Lock()
		changed := h.changed
		h.changedMu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			return cond()
		}
	}
}

func newHarness(t *testing.T, toml string) *harness {
	t.Helper()
	return newHarnessAt(t, toml, t.TempDir(), time.Now)
}

// newHarnessAt runs over the data in dir with the clock now.
func newHarnessAt(t *testing.T, toml, dir string, now func() time.Time) *harness {
	t.Helper()
	return startHarness(t, toml, dir, now, nil)
}

// newHarnessOver runs its dispatcher over the store over makes of the
// bbolt file: one that fails or stalls on purpose.
func newHarnessOver(t *testing.T, toml string, over func(*bboltstore.DB) app.Store) *harness {
	t.Helper()
	return startHarness(t, toml, t.TempDir(), time.Now, over)
}

func startHarness(t *testing.T, toml, dir string, now func() time.Time, over func(*bboltstore.DB) app.Store) *harness {
	t.Helper()
	cfg, err := config.Parse("test.toml", toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var store app.Store = db
	if over != nil {
		store = over(db)
	}
	h := &harness{cfg: cfg, db: db, recv: receive.New(cfg, db), disp: dispatch.New(cfg, store, httpsend.New(cfg, "dev")),
		changed: make(chan struct{})}
	h.db.OnOpened(func() { h.disp.Wake(); h.signal() })
	dispatch.OnRecorded(h.disp, h.signal)
	h.recv.Now, h.disp.Now = now, now
	h.disp.Controls = db // pauses and Retry-After holds, as serve sets them
	h.disp.Health = db   // failing since, next try, as serve sets it
	ctx, cancel := context.WithCancel(context.Background())
	sendCtx, cancelSends := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.disp.Run(ctx, sendCtx); close(done) }()
	h.stopRun = sync.OnceFunc(func() { cancel(); <-done })
	h.cancelSends = cancelSends
	h.stop = sync.OnceFunc(func() { h.stopRun(); h.disp.Wait(); cancelSends(); db.Close() })
	t.Cleanup(func() { h.stop() })
	return h
}

// send receives a GitHub-signed event with delivery id id for source gh.
func (h *harness) send(t testing.TB, id string, body string) {
	t.Helper()
	if err := h.accept(t, id, body); err != nil {
		t.Fatal(err)
	}
}

// accept is send for other goroutines than the test's: it returns what
// went wrong.
func (h *harness) accept(t testing.TB, id string, body string) error {
	in := apptest.Signed(t, "github", "gh-secret", []byte(body), "", id, "push", h.recv.Now())
	res, err := h.recv.Receive(context.Background(), "gh", in)
	if err != nil || res.Outcome != app.Accepted {
		return fmt.Errorf("Receive(%s) = %+v, %v", id, res, err)
	}
	return nil
}

// inParallel calls f(1) … f(n) from workers goroutines, each taking the
// next i until none is left; a goroutine stops at its first error, which
// fails tb.
func inParallel(tb testing.TB, workers, n int, f func(i int) error) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if err := f(i); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// deliveries returns the deliveries of the event accepted as id.
func (h *harness) deliveries(t *testing.T, id string) []*app.Delivery {
	t.Helper()
	_, seq, ok, err := h.db.LookupID(context.Background(), "gh", id)
	if !ok || err != nil {
		t.Fatalf("event %s not stored: %v", id, err)
	}
	ds, err := h.db.EventDeliveries(context.Background(), seq)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// waitState waits until delivery n of event id is in state.
func (h *harness) waitState(t *testing.T, id string, n int, state app.DeliveryState) *app.Delivery {
	t.Helper()
	var ds []*app.Delivery
	if !h.waitFor(20*time.Second, func() bool {
		ds = h.deliveries(t, id)
		return len(ds) > n && ds[n].State == state
	}) {
		t.Fatalf("delivery %d of %s: %+v, want state %v", n, id, ds, state)
	}
	return ds[n]
}

// waitAttempts waits until delivery n of event id has at least attempts
// attempts recorded, and returns it.
func (h *harness) waitAttempts(t *testing.T, id string, n, attempts int) *app.Delivery {
	t.Helper()
	var ds []*app.Delivery
	if !h.waitFor(20*time.Second, func() bool {
		ds = h.deliveries(t, id)
		return len(ds) > n && ds[n].Attempts >= attempts
	}) {
		t.Fatalf("delivery %d of %s: %+v, want %d attempts recorded", n, id, ds, attempts)
	}
	return ds[n]
}

func destsConfig(retry string, dests ...string) string {
	var b strings.Builder
	b.WriteString("[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"gh-secret\"\n")
	var names []string
	for i, url := range dests {
		name := fmt.Sprintf("d%d", i)
		names = append(names, fmt.Sprintf("%q", name))
		fmt.Fprintf(&b, "[[destination]]\nname = %q\nurl = %q\nsecret = %q\ntimeout = \"2s\"\nretry = %s\nheaders = { X-Api-Key = \"k-%d\" }\n", name, url, destSecret, retry, i)
	}
	fmt.Fprintf(&b, "[[route]]\nsource = \"gh\"\ntopics = [\"push\", \"release/*\"]\nto = [%s]\n", strings.Join(names, ", "))
	return b.String()
}
