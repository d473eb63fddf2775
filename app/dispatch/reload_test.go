package dispatch_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/dispatch"
)

// gatedSink answers 200 to every request, each only once the test opens
// its gate; arrived gets a token per request as it arrives.
type gatedSink struct {
	*httptest.Server
	gate    chan struct{}
	arrived chan struct{}
	n       atomic.Int64
}

func newGatedSink(t *testing.T) *gatedSink {
	s := &gatedSink{gate: make(chan struct{}), arrived: make(chan struct{}, 100)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.n.Add(1)
		s.arrived <- struct{}{}
		<-s.gate
		w.WriteHeader(200)
	}))
	t.Cleanup(s.Close)
	return s
}

// afterPass waits until the dispatcher began a pass after this call.
func afterPass(t *testing.T, d *dispatch.Dispatcher) {
	t.Helper()
	called := time.Now()
	done := make(chan struct{})
	var once sync.Once
	dispatch.OnPass(d, func(began time.Time) {
		if began.After(called) {
			once.Do(func() { close(done) })
		}
	})
	defer dispatch.OnPass(d, nil)
	d.Wake()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("no pass of the dispatcher")
	}
}

func mustParse(t *testing.T, toml string) *app.Config {
	t.Helper()
	cfg, err := config.Parse("test.toml", toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A destination a reload removes finishes its send in flight (recorded),
// takes no new work, keeps its waiting deliveries in the outbox, and
// sends them when a later reload names it again.
func TestDispatcher_ApplyRemovesAndRestoresDestination(t *testing.T) {
	a, b := newSink(t, 200), newGatedSink(t)
	both := destsConfig(`["1m"]`, a.URL, b.URL) // d0 → a, d1 → b
	onlyA := destsConfig(`["1m"]`, a.URL)
	h := newHarness(t, both)

	// A send to d1 is in flight when the reload removes d1.
	h.send(t, "e1", `{"n": 1}`)
	<-b.arrived
	h.disp.Apply(mustParse(t, onlyA))
	afterPass(t, h.disp)
	close(b.gate) // the send in flight ends: its attempt is recorded
	h.waitState(t, "e1", 1, app.Delivered)
	h.waitState(t, "e1", 0, app.Delivered)

	// The receiver still routes to d1 (its config is the old one): the
	// delivery to d1 waits, unsent, while d0's goes out.
	h.send(t, "e2", `{"n": 2}`)
	h.waitState(t, "e2", 0, app.Delivered)
	afterPass(t, h.disp)
	afterPass(t, h.disp)
	if ds := h.deliveries(t, "e2"); ds[1].Destination != "d1" || ds[1].State != app.Pending || ds[1].Attempts != 0 {
		t.Fatalf("the removed destination's delivery: %+v; want pending, never tried", ds[1])
	}
	if n := b.n.Load(); n != 1 {
		t.Fatalf("the removed destination had %d requests; want 1 (e1's)", n)
	}

	// d1 is back: its waiting delivery goes out.
	h.disp.Apply(mustParse(t, both))
	h.waitState(t, "e2", 1, app.Delivered)
	if n := b.n.Load(); n != 2 {
		t.Fatalf("d1 had %d requests; want 2", n)
	}
}

// A destination whose concurrency a reload changes keeps its lane: the
// sends in flight on its old senders finish and are recorded, and new
// ones go out on the new senders.
func TestDispatcher_ApplyConcurrency(t *testing.T) {
	b := newGatedSink(t)
	one := strings.Replace(destsConfig(`["1m"]`, b.URL), `timeout = "2s"`, "timeout = \"2s\"\nconcurrency = 1", 1)
	h := newHarness(t, one)
	h.send(t, "e1", `{"n": 1}`)
	<-b.arrived
	cfg := mustParse(t, one)
	cfg.Destinations[0].Concurrency = 2
	h.disp.Apply(cfg)
	afterPass(t, h.disp)
	h.send(t, "e2", `{"n": 2}`)
	<-b.arrived // with one slot it could not start while e1's hangs
	close(b.gate)
	h.waitState(t, "e1", 0, app.Delivered)
	h.waitState(t, "e2", 0, app.Delivered)
}

// Reloads while webhooks arrive: every request gets the config in force
// when it began, none fails (go test -race checks the swap).
func TestReceiver_ApplyWhileReceiving(t *testing.T) {
	a := newSink(t, 200)
	one, two := destsConfig(`["1m"]`, a.URL), destsConfig(`["1m"]`, a.URL, a.URL)
	h := newHarness(t, one)
	cfgs := []*app.Config{mustParse(t, one), mustParse(t, two)}
	stop := make(chan struct{})
	// A reload follows each webhook taken, while the other workers' are
	// in flight.
	accepted := make(chan struct{}, 1)
	var applied sync.WaitGroup
	applied.Go(func() {
		for i := 0; ; i++ {
			h.recv.Apply(cfgs[i%2])
			h.disp.Apply(cfgs[i%2])
			select {
			case <-stop:
				return
			case <-accepted:
			}
		}
	})
	inParallel(t, 8, 400, func(i int) error {
		err := h.accept(t, "x-"+strconv.Itoa(i), `{"n": 0}`)
		select {
		case accepted <- struct{}{}:
		default: // a reload is due already
		}
		return err
	})
	close(stop)
	applied.Wait()
	if st := h.recv.SourceStats("gh"); st == nil {
		t.Fatal("the source's stats were lost in a reload")
	}
	if _, err := h.db.CountDead(context.Background()); err != nil {
		t.Fatal(err)
	}
}
