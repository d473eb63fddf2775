package cli_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app/apptest"
	"hookbox/storage/postgres/pgtest"
)

// clusterSink is a destination that answers 200 after delay and keeps,
// per X-GitHub-Delivery, how many times and when it first took it.
type clusterSink struct {
	url      string
	delay    atomic.Int64 // nanoseconds
	attempts atomic.Int64
	mu       sync.Mutex
	got      map[string]int
	first    map[string]time.Time
	lastAt   map[string]time.Time
}

func newClusterSink(t *testing.T) *clusterSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &clusterSink{url: "http://" + ln.Addr().String() + "/hook", got: map[string]int{}, first: map[string]time.Time{}, lastAt: map[string]time.Time{}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.attempts.Add(1)
		time.Sleep(time.Duration(s.delay.Load())) // a slow destination, so that sends are in flight: the time is the point
		id := r.Header.Get("X-GitHub-Delivery")
		s.mu.Lock()
		if s.got[id] == 0 {
			s.first[id] = time.Now()
		}
		s.got[id]++
		s.lastAt[id] = time.Now()
		s.mu.Unlock()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// missing returns the ids of want the sink has not taken, and the latest
// first delivery among the others.
func (s *clusterSink) missing(want map[string]bool) (missing []string, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range want {
		if s.got[id] == 0 {
			missing = append(missing, id)
		} else if s.first[id].After(last) {
			last = s.first[id]
		}
	}
	return missing, last
}

// Two nodes on one database, as behind a load balancer: an id accepted on
// one node is a duplicate on the other, also when both receive it at the
// same moment; every acknowledged event is delivered; and when one node is
// killed (SIGKILL) under load with sends in flight, the other delivers
// everything the dead node had leased once the lease has ended, with
// nothing lost.
func TestCluster_TwoNodes(t *testing.T) {
	t.Parallel() // mostly waits for the killed node's leases to end
	dbURL := pgtest.URL(t)
	sink := newClusterSink(t)
	const timeout = time.Second
	lease := timeout + 5*time.Second
	config := writeConfig(t, t.TempDir(), fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "sink"
url = %q
timeout = %q
concurrency = 8
retry = ["100ms", "100ms", "100ms", "100ms", "100ms"]

[[route]]
source = "gh"
to = ["sink"]

[retention]
sweep = "@every 1s"
`, sink.url, timeout.String()), storeCase{url: dbURL}.config(timeout))
	nodes := []*proc{start(t, config), start(t, config)}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	acked := map[string]bool{}
	var mu sync.Mutex
	ack := func(id string) { mu.Lock(); acked[id] = true; mu.Unlock() }

	t.Run("SameIDOnBothAtOnce", func(t *testing.T) {
		for i := range 100 {
			id := fmt.Sprint("both-", i)
			var wg sync.WaitGroup
			status := make([]string, 2)
			start := make(chan struct{})
			for n := range nodes {
				wg.Go(func() {
					<-start
					code, st, err := crashSend(client, nodes[n].addr, id)
					if err != nil || code != 200 {
						t.Errorf("%s on node %d: %d %v", id, n, code, err)
					}
					status[n] = st
				})
			}
			close(start)
			wg.Wait()
			if !(status[0] == "accepted" && status[1] == "duplicate" || status[0] == "duplicate" && status[1] == "accepted") {
				t.Fatalf("%s sent to both nodes at once: %v; want one accepted, one duplicate", id, status)
			}
			ack(id)
		}
	})
	t.Run("AlternatingSenders", func(t *testing.T) {
		for i := range 200 {
			id := fmt.Sprint("alt-", i)
			first, second := nodes[i%2], nodes[(i+1)%2]
			if code, st, err := crashSend(client, first.addr, id); err != nil || code != 200 || st != "accepted" {
				t.Fatalf("%s: %d %q %v; want accepted", id, code, st, err)
			}
			ack(id)
			if code, st, err := crashSend(client, second.addr, id); err != nil || code != 200 || st != "duplicate" {
				t.Fatalf("%s on the other node: %d %q %v; want duplicate", id, code, st, err)
			}
		}
		waitDelivered(t, sink, acked, 30*time.Second)
	})

	// Each node's API shows the cluster: the events the other node
	// accepted, and the same counts.
	t.Run("EachNodeShowsTheCluster", func(t *testing.T) {
		var answers [2]string
		for n, p := range nodes {
			for _, id := range []string{"alt-2", "alt-3"} { // accepted on node 0 and node 1
				body := adminGet(t, p.addr, "/api/v1/events?id="+id)
				if !strings.Contains(body, `"id":"`+id+`"`) || !strings.Contains(body, `"status":"delivered"`) {
					t.Fatalf("node %d does not list %s as delivered: %s", n, id, body)
				}
			}
			// (Statuses may move between the two reads: a sent delivery's
			// attempt can be recorded in between.)
			answers[n] = statusRE.ReplaceAllString(adminGet(t, p.addr, "/api/v1/events?limit=500"), "")
		}
		if answers[0] != answers[1] {
			t.Fatalf("the nodes list different events:\n%s\n%s", answers[0], answers[1])
		}
	})

	// The sweep runs every second, on one node only.
	sweeps := func(p *proc) int { return strings.Count(p.logText(), "sweep done") }
	apptest.Eventually(t, 15*time.Second, "three sweeps", func() bool { return sweeps(nodes[0])+sweeps(nodes[1]) >= 3 })
	if sweeps(nodes[0]) > 0 && sweeps(nodes[1]) > 0 {
		t.Fatalf("both nodes ran the sweep (%d and %d times): it is once per cluster", sweeps(nodes[0]), sweeps(nodes[1]))
	}
	leader := 0
	if sweeps(nodes[1]) > 0 {
		leader = 1
	}

	// Load on both nodes with a slow destination, so that each has sends
	// in flight; then node 0 is killed.
	sink.delay.Store(int64(300 * time.Millisecond))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent atomic.Int64
	for w := range 8 {
		wg.Go(func() {
			n := nodes[w%2]
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("load-%d-%d", w, i)
				code, st, err := crashSend(client, n.addr, id)
				if err != nil {
					return // node 0 died
				}
				sent.Add(1)
				if code == 200 && st == "accepted" {
					ack(id)
				}
			}
		})
	}
	// Kill node 0 once it holds leases: sends in flight.
	apptest.Eventually(t, 30*time.Second, "node 0 holding leases", func() bool {
		return sink.attempts.Load() > 0 && len(leasedBy(t, dbURL, nodes[0].cmd.Process.Pid)) > 0
	})
	before := sink.attempts.Load()
	if err := nodes[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	<-nodes[0].done
	nodes[0].cmd.Wait()
	leased := leasedBy(t, dbURL, nodes[0].cmd.Process.Pid)
	afterKill := sent.Load()
	apptest.Eventually(t, 30*time.Second, "node 1 taking load after the kill", func() bool { return sent.Load() >= afterKill+20 })
	close(stop)
	wg.Wait()
	sink.delay.Store(0)
	if before == 0 {
		t.Fatal("no delivery was made before the kill")
	}
	if len(leased) == 0 {
		t.Fatal("node 0 held no lease when it was killed: the hand-over is not tested")
	}
	waitDelivered(t, sink, acked, lease+30*time.Second)
	// The killed node's sends were cut, whatever the sink made of them:
	// node 1 sends each again once its lease has ended.
	apptest.Until(t, lease+30*time.Second, func() error {
		var late []string
		sink.mu.Lock()
		for id, end := range leased {
			if sink.lastAt[id].Before(end.Add(-50 * time.Millisecond)) {
				late = append(late, id)
			}
		}
		sink.mu.Unlock()
		if len(late) > 0 {
			return fmt.Errorf("%d deliveries leased by the killed node were not sent again after their lease, e.g. %v", len(late), late[:min(5, len(late))])
		}
		return nil
	})
	var handed time.Time
	sink.mu.Lock()
	for id := range leased {
		if at := sink.lastAt[id]; at.After(handed) {
			handed = at
		}
	}
	sink.mu.Unlock()
	// Node 1 runs the sweep now, whichever node ran it before.
	swept := sweeps(nodes[1])
	apptest.Eventually(t, 15*time.Second, fmt.Sprintf("node 1 taking over the sweep (node %d ran it before)", leader), func() bool {
		return sweeps(nodes[1]) > swept
	})
	t.Logf("node 0 was killed holding %d leases (sends in flight); node 1 sent them %v after the kill (lease %v), and every one of the %d acknowledged events reached the sink (%d load requests)",
		len(leased), handed.Sub(killed).Round(time.Millisecond), lease, len(acked), sent.Load())
	nodes[1].stop(t)
}

// waitDelivered waits until the sink took every id of want.
func waitDelivered(t *testing.T, sink *clusterSink, want map[string]bool, within time.Duration) {
	t.Helper()
	apptest.Until(t, within, func() error {
		if missing, _ := sink.missing(want); len(missing) > 0 {
			return fmt.Errorf("%d of %d acknowledged events not delivered, e.g. %v", len(missing), len(want), missing[:min(5, len(missing))])
		}
		return nil
	})
}

// leasedBy returns the event ids of the pending deliveries that the node
// with process id pid holds leases on, and when each lease ends.
func leasedBy(t *testing.T, dbURL string, pid int) map[string]time.Time {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT convert_from(e.id, 'UTF8'), d.run_at FROM hookbox_deliveries d JOIN hookbox_events e ON e.seq = d.event_seq
		WHERE d.state = 1 AND d.leased_by LIKE $1`, fmt.Sprintf("%%-%d-%%", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]time.Time{}
	var id string
	var end time.Time
	if _, err := pgx.ForEachRow(rows, []any{&id, &end}, func() error { out[id] = end; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

var statusRE = regexp.MustCompile(`,"status":"[a-z]+"`)

// adminGet GETs path from the node at addr with the [status] login.
func adminGet(t *testing.T, addr, path string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return string(b)
}
