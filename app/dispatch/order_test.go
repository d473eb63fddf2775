package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/dispatch"
	"hookbox/app/httpsend"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

// orderSink is a destination that fails the first two tries of key A's
// first update (503) and takes everything else, noting per key the
// updates in the order they arrived and whether two of a key were ever
// in flight at once. It answers A1's second try only once every update
// of the other keys was taken (or after a bound, which fails the test):
// they must flow while A's head is still pending, whatever the timing.
type orderSink struct {
	*httptest.Server
	mu          sync.Mutex
	arrived     map[string][]int // per key, the updates as they arrived (retries too)
	took        []string         // "A1", "B3", … in the order they were taken (2xx)
	inflight    map[string]int
	overlap     []string
	failsLeft   int
	others      int           // updates of the other keys to take before A1's second answer
	othersIn    chan struct{} // closed once they were
	heldTooLong bool
}

func newOrderSink(t *testing.T, others int) *orderSink {
	s := &orderSink{arrived: map[string][]int{}, inflight: map[string]int{}, failsLeft: 2, others: others, othersIn: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var u struct {
			Key string `json:"key"`
			N   int    `json:"n"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &u); err != nil {
			http.Error(w, "bad body", 400)
			return
		}
		s.mu.Lock()
		s.inflight[u.Key]++
		if s.inflight[u.Key] > 1 {
			s.overlap = append(s.overlap, fmt.Sprint(u.Key, u.N))
		}
		s.arrived[u.Key] = append(s.arrived[u.Key], u.N)
		fail := u.Key == "A" && u.N == 1 && s.failsLeft > 0
		hold := fail && s.failsLeft == 1
		if fail {
			s.failsLeft--
		} else {
			s.took = append(s.took, fmt.Sprint(u.Key, u.N))
			if u.Key != "A" {
				if s.others--; s.others == 0 {
					close(s.othersIn)
				}
			}
		}
		s.mu.Unlock()
		// Out of flight before the answer leaves (net/http sends it when
		// the handler returns): the next of the key cannot overtake this.
		defer func() { s.mu.Lock(); s.inflight[u.Key]--; s.mu.Unlock() }()
		if hold {
			select {
			case <-s.othersIn:
			case <-time.After(20 * time.Second): // a bound, not a wait: the test fails then
				s.mu.Lock()
				s.heldTooLong = true
				s.mu.Unlock()
			}
		}
		if fail {
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(200)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *orderSink) taken() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.took) }

// check fails t unless every key's updates arrived one at a time and in
// accept order, and keys B and C all went out before A's first success.
func (s *orderSink) check(t *testing.T, keys []string, updates int) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.overlap) > 0 {
		t.Errorf("two deliveries of a key were in flight at once: %v", s.overlap)
	}
	for _, k := range keys {
		want := []int{}
		for n := 1; n <= updates; n++ {
			want = append(want, n)
		}
		if k == "A" {
			want = append([]int{1, 1}, want...) // the two failed tries of A1 first
		}
		if !slices.Equal(s.arrived[k], want) {
			t.Errorf("key %s arrived as %v, want %v (accept order, one at a time)", k, s.arrived[k], want)
		}
	}
	if s.heldTooLong {
		t.Errorf("the other keys were not all taken while A's head waited: held back by A? taken: %v", s.took)
	}
	firstA := slices.Index(s.took, "A1")
	for _, k := range keys[1:] {
		for n := 1; n <= updates; n++ {
			if i := slices.Index(s.took, fmt.Sprint(k, n)); i < 0 || i > firstA {
				t.Errorf("%s%d was taken at %d, after A1 (at %d): key %s was held back by A; taken: %v", k, n, i, firstA, k, s.took)
			}
		}
	}
}

// orderConfig is one destination, url, with 8 sends at once and short
// retries, and a route to it.
func orderConfig(url string) string {
	return fmt.Sprintf(`[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"
[[destination]]
name = "pos"
url = %q
timeout = "30s"
retry = ["50ms", "50ms", "50ms"]
concurrency = 8
[[route]]
source = "gh"
topics = ["*"]
to = ["pos"]
`, url)
}

// orderStore is what the scenario needs of a store.
type orderStore interface {
	app.Outbox
	Accept(ctx context.Context, e *app.Event, idExpires time.Time, plan *app.Plan) (bool, error)
	OnOpened(func())
}

// runOrdered runs one dispatcher per store (the stores share their data:
// one bbolt file, or one PostgreSQL database for a cluster's nodes), then
// accepts through the first keys × updates events (keys[0] is "A"), interleaved (A1, B1,
// C1, A2, …), each with a delivery to pos in the order group of its key,
// and waits until the destination took them all.
func runOrdered(t *testing.T, stores []orderStore, keys []string, updates int) *orderSink {
	sink := newOrderSink(t, (len(keys)-1)*updates)
	cfg, err := config.Parse("order.toml", orderConfig(sink.URL), nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	signal := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	for _, s := range stores {
		disp := dispatch.New(cfg, s, httpsend.New(cfg, "dev"))
		disp.Logger = slog.New(slog.DiscardHandler)
		dispatch.OnRecorded(disp, signal)
		s.OnOpened(disp.Wake)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { disp.Run(ctx, context.Background()); close(done) }()
		t.Cleanup(func() { cancel(); <-done; disp.Wait() })
	}
	at := time.Now()
	for n := 1; n <= updates; n++ {
		for _, k := range keys {
			e := &app.Event{Source: "gh", ID: fmt.Sprint(k, n), Topic: "customers/update", ReceivedAt: at,
				Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}},
				Body:   fmt.Appendf(nil, `{"key":%q,"n":%d}`, k, n)}
			plan := &app.Plan{Direct: []app.Direct{{Dest: "pos", Route: "customers", OrderKey: k}}}
			if dup, err := stores[0].Accept(context.Background(), e, at.Add(time.Hour), plan); err != nil || dup {
				t.Fatalf("Accept %s = %v, %v", e.ID, dup, err)
			}
		}
	}
	deadline := time.After(60 * time.Second)
	for sink.taken() < len(keys)*updates {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the destination took %d of %d deliveries", sink.taken(), len(keys)*updates)
		}
	}
	return sink
}

// The acceptance scenario of ordered delivery (issue 27): 3 keys × 5
// updates to a destination with 8 sends at once that fails key A's first
// update twice. Every key's updates arrive in accept order, one at a
// time, and B's and C's all go out before A's first success: A's wait
// holds only A.
func TestOrder_HeldKeyOnly(t *testing.T) {
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"A", "B", "C"}
	sink := runOrdered(t, []orderStore{db}, keys, 5)
	sink.check(t, keys, 5)
	t.Cleanup(func() { db.Close() }) // after the dispatcher's (cleanups run last first)
}

// The same on PostgreSQL with two nodes, each with its dispatcher, on one
// database: a key is held by at most one send in the cluster.
func TestOrder_HeldKeyOnlyTwoNodes(t *testing.T) {
	url := pgtest.URL(t)
	var stores []orderStore
	for range 2 {
		db, err := postgres.Open(context.Background(), url, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		stores = append(stores, db)
	}
	keys := []string{"A", "B", "C"}
	sink := runOrdered(t, stores, keys, 5)
	sink.check(t, keys, 5)
}
