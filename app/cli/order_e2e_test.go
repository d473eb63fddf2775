package cli_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/storage/postgres/pgtest"
)

// orderSink is a destination that keeps, per customer, the updates it
// answered 200 in the order it answered them and the most requests it
// had in flight at once. Key A's first update fails twice: the first
// attempt at once, the second only once B's and C's updates have all been
// delivered (or bDone's wait gives up), so the test sees, without timing,
// that A's trouble held neither.
type orderSink struct {
	url      string
	mu       sync.Mutex
	order    map[string][]int
	inflight map[string]int
	most     map[string]int
	a1       int
	othersIn chan struct{} // closed when B and C have all 5
	delayed  bool          // B and C were not all in before A's second attempt gave up waiting
}

func newOrderSink(t *testing.T) *orderSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &orderSink{url: "http://" + ln.Addr().String() + "/hook", order: map[string][]int{},
		inflight: map[string]int{}, most: map[string]int{}, othersIn: make(chan struct{})}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var u struct {
			Customer string `json:"customer"`
			N        int    `json:"n"`
		}
		json.Unmarshal(raw, &u)
		s.mu.Lock()
		s.inflight[u.Customer]++
		s.most[u.Customer] = max(s.most[u.Customer], s.inflight[u.Customer])
		attempt := 0
		if u.Customer == "A" && u.N == 1 {
			s.a1++
			attempt = s.a1
		}
		s.mu.Unlock()
		code := 200
		switch attempt {
		case 1:
			code = 503
		case 2:
			select {
			case <-s.othersIn:
			case <-time.After(20 * time.Second):
				s.mu.Lock()
				s.delayed = true
				s.mu.Unlock()
			}
			code = 503
		}
		s.mu.Lock()
		s.inflight[u.Customer]--
		if code == 200 {
			s.order[u.Customer] = append(s.order[u.Customer], u.N)
			if len(s.order["B"]) == 5 && len(s.order["C"]) == 5 {
				select {
				case <-s.othersIn:
				default:
					close(s.othersIn)
				}
			}
		}
		s.mu.Unlock()
		w.WriteHeader(code)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// orderConfig routes gh's events to the sink in order per customer.
func orderConfig(url string) string {
	return fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "sink"
url = %q
timeout = "30s"
concurrency = 8
retry = ["50ms", "50ms", "50ms", "50ms", "50ms"]

[[route]]
name = "pos"
source = "gh"
order_key = "{body.customer}"
to = ["sink"]
`, url)
}

// Delivery in order per entity, through the binary: 3 customers × 5
// updates to a destination with 8 slots that fails customer A's first
// update twice. Every customer's updates arrive in accept order, one at a
// time, and B's and C's are not held by A's retries: on bbolt, on
// PostgreSQL, and on PostgreSQL with two nodes taking the events in turn.
func TestEndToEnd_OrderPerKey(t *testing.T) {
	eachStore(t, func(t *testing.T, st storeCase) { testOrderPerKey(t, st, 1) })
	t.Run("postgres-two-nodes", func(t *testing.T) { testOrderPerKey(t, storeCase{name: "postgres", url: pgtest.URL(t)}, 2) })
}

func testOrderPerKey(t *testing.T, st storeCase, nodes int) {
	sink := newOrderSink(t)
	config := writeConfig(t, t.TempDir(), orderConfig(sink.url), st.config(30*time.Second))
	var procs []*proc
	for range nodes {
		procs = append(procs, start(t, config))
	}
	i := 0
	for n := 1; n <= 5; n++ {
		for _, c := range []string{"A", "B", "C"} {
			body := []byte(fmt.Sprintf(`{"customer": %q, "n": %d}`, c, n))
			p := procs[i%len(procs)]
			i++
			if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, fmt.Sprintf("%s-%d", c, n))); r.code != 200 {
				t.Fatalf("post %s-%d: %d %v", c, n, r.code, r.body)
			}
		}
	}
	done := func() bool {
		sink.mu.Lock()
		defer sink.mu.Unlock()
		return len(sink.order["A"]) >= 5 && len(sink.order["B"]) >= 5 && len(sink.order["C"]) >= 5
	}
	apptest.Within(60*time.Second, done)
	sink.mu.Lock()
	defer sink.mu.Unlock()
	want := []int{1, 2, 3, 4, 5}
	for _, c := range []string{"A", "B", "C"} {
		if !slices.Equal(sink.order[c], want) {
			t.Errorf("customer %s: updates delivered in order %v, want %v", c, sink.order[c], want)
		}
		if sink.most[c] != 1 {
			t.Errorf("customer %s: %d of its updates in flight at once, want 1", c, sink.most[c])
		}
	}
	if sink.delayed {
		t.Error("B's and C's updates were not all delivered while A's first update was failing")
	}
	if sink.a1 != 3 {
		t.Errorf("A's first update took %d attempts, want 3 (two failures, then delivered)", sink.a1)
	}
	sink.mu.Unlock()
	for _, p := range procs {
		p.stop(t)
	}
	sink.mu.Lock()
}
