package cli_test

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/storage/postgres/pgtest"
)

// retrySink answers 503 to the first attempt of each delivery (by its
// webhook-id) and 200 to the next, and tells each arrival on arrived.
type retrySink struct {
	url     string
	mu      sync.Mutex
	tries   map[string]int
	arrived chan arrival
}

type arrival struct {
	id      string // webhook-id
	attempt int
	at      time.Time
}

func newRetrySink(t *testing.T) *retrySink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &retrySink{url: "http://" + ln.Addr().String() + "/hook", tries: map[string]int{}, arrived: make(chan arrival, 64)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("webhook-id")
		s.mu.Lock()
		s.tries[id]++
		n := s.tries[id]
		s.mu.Unlock()
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		s.arrived <- arrival{id: id, attempt: n, at: time.Now()}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// next waits for the next arrival, failing t after within.
func (s *retrySink) next(t *testing.T, within time.Duration) arrival {
	t.Helper()
	select {
	case a := <-s.arrived:
		return a
	case <-time.After(within):
		t.Fatalf("no request reached the sink within %v", within)
	}
	return arrival{}
}

// waitingDelivery waits until event seq's one delivery has failed once and
// waits for its 30 m step, and returns its id.
func waitingDelivery(t *testing.T, addr string, seq uint64) uint64 {
	t.Helper()
	var id uint64
	apptest.Until(t, 10*time.Second, func() error { // its record is written after the answer
		var ev struct {
			Deliveries []struct {
				ID       uint64    `json:"id"`
				State    string    `json:"state"`
				Attempts int       `json:"attempts"`
				Due      time.Time `json:"due"`
			} `json:"deliveries"`
		}
		apiJSON(t, addr, fmt.Sprintf("/api/v1/events/%d", seq), &ev)
		if len(ev.Deliveries) == 1 {
			if d := ev.Deliveries[0]; d.State == "pending" && d.Attempts == 1 && time.Until(d.Due) > 20*time.Minute {
				id = d.ID
				return nil
			}
		}
		return fmt.Errorf("event %d's delivery does not wait for its 30 m step: %+v", seq, ev.Deliveries)
	})
	return id
}

// Retry now, through the binary: a delivery that failed once and waits for
// its 30 m step is delivered within 1 s of `hookbox retry ID`, and three
// of them within 1 s of `hookbox retry -destination`; on bbolt, on
// PostgreSQL, and on two PostgreSQL nodes (called through node A, either
// node may send it).
func TestEndToEnd_RetryNow(t *testing.T) {
	eachStore(t, func(t *testing.T, st storeCase) { testRetryNow(t, st, 1) })
	t.Run("postgres-two-nodes", func(t *testing.T) { testRetryNow(t, storeCase{name: "postgres", url: pgtest.URL(t)}, 2) })
}

func testRetryNow(t *testing.T, st storeCase, nodes int) {
	sink := newRetrySink(t)
	config := writeConfig(t, t.TempDir(), fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "sink"
url = %q
retry = ["30m", "2h"]

[[route]]
source = "gh"
to = ["sink"]
`, sink.url), st.config(15*time.Second))
	var procs []*proc
	for range nodes {
		procs = append(procs, start(t, config))
	}
	a := procs[0]
	accept := func(id string) uint64 {
		t.Helper()
		body := []byte(fmt.Sprintf(`{"order": %q}`, id))
		if r := post(t, a.addr, "gh", body, githubHeaders(body, e2eSecret, id)); r.code != 200 {
			t.Fatalf("post %s: %d %v", id, r.code, r.body)
		}
		for _, e := range storedEvents(t, a.addr, "gh") {
			if e.ID == id {
				return e.Seq
			}
		}
		t.Fatalf("event %s not listed", id)
		return 0
	}
	// retried runs hookbox retry through node A and returns what it printed
	// and when it was called.
	retried := func(args ...string) (string, time.Time) {
		t.Helper()
		called := time.Now() // the process's start and config load count too
		out, errOut, code := hookboxAt(t, config, a.addr, nil, append([]string{"retry"}, args...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("hookbox retry %v: exit %d, %q %q", args, code, out, errOut)
		}
		return out, called
	}

	t.Run("OneDelivery", func(t *testing.T) {
		seq := accept("wh-1004")
		if first := sink.next(t, 10*time.Second); first.attempt != 1 {
			t.Fatalf("first arrival %+v", first)
		}
		id := waitingDelivery(t, a.addr, seq)
		out, called := retried(fmt.Sprint(id))
		if want := fmt.Sprintf("retried delivery #%d sink ← gh/wh-1004 push: due now\n", id); out != want {
			t.Fatalf("hookbox retry %d printed %q; want %q", id, out, want)
		}
		got := sink.next(t, 5*time.Second)
		took := got.at.Sub(called)
		t.Logf("delivered %v after hookbox retry was called (%d node(s), %s)", took, nodes, st.name)
		if got.attempt != 2 || took > time.Second {
			t.Fatalf("after retry now: %+v, %v after the call; want attempt 2 within 1 s", got, took)
		}
	})
	t.Run("Destination", func(t *testing.T) {
		var seqs []uint64
		for i := range 3 {
			seqs = append(seqs, accept(fmt.Sprint("wh-20", i)))
		}
		for range 3 {
			if first := sink.next(t, 10*time.Second); first.attempt != 1 {
				t.Fatalf("first arrival %+v", first)
			}
		}
		for _, seq := range seqs {
			waitingDelivery(t, a.addr, seq)
		}
		out, called := retried("-destination", "sink")
		if !strings.HasPrefix(out, "retried 3 deliveries to sink: due now") {
			t.Fatalf("hookbox retry -destination sink printed %q", out)
		}
		var last time.Duration
		for range 3 {
			got := sink.next(t, 5*time.Second)
			if got.attempt != 2 {
				t.Fatalf("after retry now: %+v; want a second attempt", got)
			}
			last = max(last, got.at.Sub(called))
		}
		t.Logf("3 delivered, the last %v after hookbox retry was called (%d node(s), %s)", last, nodes, st.name)
		if last > time.Second {
			t.Fatalf("the last of 3 arrived %v after the call; want within 1 s", last)
		}
		// Nothing waits any more.
		if out, _ := retried("-destination", "sink"); !strings.HasPrefix(out, "no delivery to sink waits") {
			t.Fatalf("second hookbox retry -destination printed %q", out)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		_, errOut, code := hookboxAt(t, config, a.addr, nil, "retry", "99999999")
		if code != 1 || !strings.Contains(errOut, "there is no delivery #99999999") {
			t.Fatalf("retry of an unknown delivery: exit %d, %q", code, errOut)
		}
		_, errOut, code = hookboxAt(t, config, a.addr, nil, "retry", "-destination", "nowhere")
		if code != 1 || !strings.Contains(errOut, `no destination named "nowhere"`) {
			t.Fatalf("retry of an unknown destination: exit %d, %q", code, errOut)
		}
		_, errOut, code = hookboxAt(t, config, a.addr, nil, "retry", "7", "-destination", "sink")
		if code != 2 || !strings.Contains(errOut, "not both or neither") {
			t.Fatalf("retry with ids and -destination: exit %d, %q", code, errOut)
		}
	})
	select {
	case extra := <-sink.arrived:
		t.Fatalf("a delivery went out again: %+v", extra)
	default:
	}
}
