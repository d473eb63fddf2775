package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
	"hookbox/storage/postgres/pgtest"
)

// startSink is a destination that notes each request's event number
// (the body's n) and start time, and answers what answer says.
type startSink struct {
	url    string
	mu     sync.Mutex
	ns     []int
	starts []time.Time
	answer func(i int, w http.ResponseWriter) // i counts the requests from 0
	got    chan struct{}                      // a token per request, never blocking
}

func newStartSink(t *testing.T, answer func(i int, w http.ResponseWriter)) *startSink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &startSink{url: "http://" + ln.Addr().String() + "/hook", answer: answer, got: make(chan struct{}, 1<<16)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		raw, _ := io.ReadAll(r.Body)
		var b struct {
			N int `json:"n"`
		}
		json.Unmarshal(raw, &b)
		s.mu.Lock()
		i := len(s.ns)
		s.ns, s.starts = append(s.ns, b.N), append(s.starts, at)
		s.mu.Unlock()
		if s.answer != nil {
			s.answer(i, w)
		} else {
			w.WriteHeader(200)
		}
		select {
		case s.got <- struct{}{}:
		default:
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *startSink) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.ns) }

// waitFor waits until the sink has had n requests, or fails after limit.
func (s *startSink) waitFor(t *testing.T, n int, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for s.count() < n {
		select {
		case <-s.got:
		case <-deadline:
			t.Fatalf("the sink had %d requests after %v; want %d", s.count(), limit, n)
		}
	}
}

// controlConfig is one destination "sink" with extra lines, all of gh's
// events routed to it.
func controlConfig(url, extra string) string {
	return fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "sink"
url = %q
timeout = "5s"
%s

[[route]]
source = "gh"
to = ["sink"]
`, url, extra)
}

// apiDo calls the admin API of the server at addr with the e2e login.
func apiDo(t *testing.T, addr, method, path string, body []byte) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+addr+"/api/v1"+path, bytes.NewReader(body))
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

// destJSON is one destination of GET /api/v1/destinations.
type destJSON struct {
	Name         string     `json:"name"`
	Paused       bool       `json:"paused"`
	PausedAt     *time.Time `json:"paused_at"`
	PausedReason string     `json:"paused_reason"`
	PausedBy     string     `json:"paused_by"`
	Waiting      int        `json:"waiting"`
	Rate         string     `json:"rate"`
	HeldUntil    *time.Time `json:"held_until"`
	FailingSince *time.Time `json:"failing_since"`
}

func sinkState(t *testing.T, addr string) destJSON {
	t.Helper()
	code, raw := apiDo(t, addr, "GET", "/destinations", nil)
	var out struct {
		Destinations []destJSON `json:"destinations"`
	}
	if err := json.Unmarshal(raw, &out); code != 200 || err != nil {
		t.Fatalf("GET /api/v1/destinations: %d %s %v", code, raw, err)
	}
	for _, d := range out.Destinations {
		if d.Name == "sink" {
			return d
		}
	}
	t.Fatalf("GET /api/v1/destinations: no sink in %s", raw)
	return destJSON{}
}

// hookboxCLI runs a hookbox command against the server at addr.
func hookboxCLI(t *testing.T, config, addr string, args ...string) string {
	t.Helper()
	live := filepath.Join(t.TempDir(), "live.toml")
	data, _ := os.ReadFile(config)
	os.WriteFile(live, bytes.Replace(data, []byte(`"127.0.0.1:0"`), []byte(`"`+addr+`"`), 1), 0o600)
	cmd := exec.Command(clitest.Binary(t), append([]string{args[0], "-config", live}, args[1:]...)...)
	cmd.Env = append(os.Environ(), "E2E_GH_SECRET="+e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hookbox %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// waitPausedRead waits until every node has read the pause of sink: each
// logs it when it reads it (within its ControlEvery, 250 ms).
func waitPausedRead(t *testing.T, procs []*proc) {
	t.Helper()
	waitPauseRead(t, procs, "sink")
}

// waitPauseRead waits until every node of procs said it read that dest is
// paused.
func waitPauseRead(t *testing.T, procs []*proc, dest string) {
	t.Helper()
	for _, p := range procs {
		apptest.Until(t, 10*time.Second, func() error {
			log := p.logText()
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, "destination paused: its deliveries wait") && strings.Contains(l, "destination="+dest) {
					return nil
				}
			}
			return fmt.Errorf("no node's line saying it read the pause:\n%s", log)
		})
	}
}

func postN(t *testing.T, procs []*proc, from, to int) {
	t.Helper()
	for n := from; n <= to; n++ {
		body := []byte(fmt.Sprintf(`{"n": %d}`, n))
		if r := post(t, procs[n%len(procs)].addr, "gh", body, githubHeaders(body, e2eSecret, "ev-"+strconv.Itoa(n))); r.code != 200 {
			t.Fatalf("post %d: %d %v", n, r.code, r.body)
		}
	}
}

// Pause a destination (hookbox pause) while 200 events arrive, with a
// restart in the middle: the sink gets nothing and the API shows 200
// waiting; resume (the API, through another node on PostgreSQL) and all
// 200 arrive once each in accept order. With two PostgreSQL nodes the
// events go to both, and the node the pause did not go through sends
// nothing either; there the events share an order key, as accept order
// across nodes, each with its own sends in flight, needs.
func TestEndToEnd_PauseResume(t *testing.T) {
	t.Parallel() // it waits on pauses and the paused
	eachStore(t, func(t *testing.T, st storeCase) { testPauseResume(t, st, 1) })
	t.Run("postgres-two-nodes", func(t *testing.T) { testPauseResume(t, storeCase{name: "postgres", url: pgtest.URL(t)}, 2) })
}

func testPauseResume(t *testing.T, st storeCase, nodes int) {
	sink := newStartSink(t, nil)
	// The sink takes the pushes; marks, events for another destination,
	// show that a node went on working while the sink was paused.
	marks := newLedgerSink(t, 200)
	cfg := strings.Replace(controlConfig(sink.url, "concurrency = 1"), `to = ["sink"]`, "topics = [\"push\"]\nto = [\"sink\"]", 1) +
		fmt.Sprintf("\n[[destination]]\nname = \"marks\"\nurl = %q\ntimeout = \"5s\"\n\n[[route]]\nsource = \"gh\"\ntopics = [\"mark\"]\nto = [\"marks\"]\n", marks.url)
	if nodes > 1 {
		// Each node has its own sends in flight: across nodes, accept
		// order is an order group's (every event here is in one).
		cfg = strings.Replace(cfg, `to = ["sink"]`, "to = [\"sink\"]\norder_key = \"{header.X-GitHub-Event}\"", 1)
	}
	config := writeConfig(t, t.TempDir(), cfg, st.config(5*time.Second))
	var procs []*proc
	for range nodes {
		procs = append(procs, start(t, config))
	}
	if out := hookboxCLI(t, config, procs[0].addr, "pause", "-reason", "ERP maintenance", "sink"); out != "paused sink\n" {
		t.Fatalf("hookbox pause said %q", out)
	}
	waitPausedRead(t, procs)
	postN(t, procs, 1, 100)
	for _, p := range procs { // a restart in the middle: the pause is stored
		p.stop(t)
	}
	procs = procs[:0]
	for range nodes {
		procs = append(procs, start(t, config))
	}
	waitPausedRead(t, procs)
	postN(t, procs, 101, 200)
	// A send that does not come has no signal of its own: a mark posted to
	// each node after the 200 is delivered once that node went on past
	// them; what it would have sent the sink it would have sent by then.
	var ids []string
	for i, p := range procs {
		id := fmt.Sprintf("mark-%d", i)
		body := []byte(`{"mark": true}`)
		h := githubHeaders(body, e2eSecret, id)
		h["X-GitHub-Event"] = "mark"
		if r := post(t, p.addr, "gh", body, h); r.code != 200 {
			t.Fatalf("post %s: %d %v", id, r.code, r.body)
		}
		ids = append(ids, id)
	}
	marks.waitDelivered(t, ids, 15*time.Second)
	if n := sink.count(); n != 0 {
		t.Fatalf("the sink had %d requests while the destination was paused; want 0", n)
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	me := "local:" + u.Username
	for _, p := range procs {
		s := sinkState(t, p.addr)
		if !s.Paused || s.PausedBy != me || s.PausedReason != "ERP maintenance" || s.PausedAt == nil || s.Waiting != 200 {
			t.Fatalf("GET /api/v1/destinations while paused: %+v; want paused by %s (hookbox pause on the box, through the local socket) for ERP maintenance, 200 waiting", s, me)
		}
	}
	if code, raw := apiDo(t, procs[len(procs)-1].addr, "POST", "/destinations/sink/resume", nil); code != 200 {
		t.Fatalf("resume: %d %s", code, raw)
	}
	sink.waitFor(t, 200, 60*time.Second)
	// The attempts are recorded after they are answered: once none is
	// waiting, no more may come, and the sink must have had each once.
	var s destJSON
	apptest.Eventually(t, 30*time.Second, "no delivery waiting after resume", func() bool {
		s = sinkState(t, procs[0].addr)
		return s.Waiting == 0
	})
	sink.mu.Lock()
	ns := append([]int(nil), sink.ns...)
	sink.mu.Unlock()
	if len(ns) != 200 {
		t.Fatalf("the sink had %d requests; want 200 (once each)", len(ns))
	}
	for i, n := range ns {
		if n != i+1 {
			t.Fatalf("request %d was event %d; want %d: not in accept order (%v)", i, n, i+1, ns)
		}
	}
	if s.Paused || s.Waiting != 0 {
		t.Errorf("after resume: %+v; want not paused, none waiting", s)
	}
	for _, p := range procs {
		p.stop(t)
	}
}

// rateCase is how the rate test runs: 50/s × 100 deliveries (about 2 s) by
// default, the 20/s × 200 (about 10 s) with HOOKBOX_E2E_FULL_RATE=1.
func rateCase() (perSecond, n int) {
	if os.Getenv("HOOKBOX_E2E_FULL_RATE") != "" {
		return 20, 200
	}
	return 50, 100
}

// rate = "R/s": the deliveries waiting for a paused destination go out at
// R a second once it is resumed, evenly spaced: the whole run takes about
// (n-1)/R, no second has more than 1.25 R starts; on two PostgreSQL nodes
// the two together keep the same rate.
func TestEndToEnd_Rate(t *testing.T) {
	eachStore(t, func(t *testing.T, st storeCase) { testRate(t, st, 1) })
	t.Run("postgres-two-nodes", func(t *testing.T) { testRate(t, storeCase{name: "postgres", url: pgtest.URL(t)}, 2) })
}

func testRate(t *testing.T, st storeCase, nodes int) {
	perSecond, n := rateCase()
	sink := newStartSink(t, nil)
	config := writeConfig(t, t.TempDir(), controlConfig(sink.url, fmt.Sprintf("concurrency = 8\nrate = \"%d/s\"", perSecond)), st.config(5*time.Second))
	var procs []*proc
	for range nodes {
		procs = append(procs, start(t, config))
	}
	if code, raw := apiDo(t, procs[0].addr, "POST", "/destinations/sink/pause", []byte(`{"reason": "load them all first"}`)); code != 200 {
		t.Fatalf("pause: %d %s", code, raw)
	}
	waitPausedRead(t, procs)
	postN(t, procs, 1, n)
	if s := sinkState(t, procs[0].addr); s.Rate != fmt.Sprintf("%d/s", perSecond) || s.Waiting != n {
		t.Fatalf("before resume: %+v; want rate %d/s, %d waiting", s, perSecond, n)
	}
	apiDo(t, procs[0].addr, "POST", "/destinations/sink/resume", nil)
	sink.waitFor(t, n, 60*time.Second)
	sink.mu.Lock()
	starts := append([]time.Time(nil), sink.starts...)
	sink.mu.Unlock()
	took := starts[len(starts)-1].Sub(starts[0])
	want := time.Duration(n-1) * time.Second / time.Duration(perSecond)
	most := 0
	for i := range starts {
		j := i
		for j < len(starts) && starts[j].Sub(starts[i]) < time.Second {
			j++
		}
		most = max(most, j-i)
	}
	t.Logf("%d deliveries at %d/s on %d node(s): first to last start %v (even spacing: %v), at most %d starts in a second",
		n, perSecond, nodes, took.Round(time.Millisecond), want, most)
	if took < want*95/100 || took > want*110/100+100*time.Millisecond {
		t.Errorf("first to last start took %v; want about %v", took, want)
	}
	if limit := perSecond * 125 / 100; most > limit {
		t.Errorf("%d starts in one second; want at most %d", most, limit)
	}
	for _, p := range procs {
		p.stop(t)
	}
}

// A destination that answers 429 with Retry-After: 3 gets no attempt, for
// any of its deliveries, for 3 s; the API says until when it is held.
// On two PostgreSQL nodes the hold is stored: the node that did not hear
// the 429 holds too.
func TestEndToEnd_RetryAfterHoldsDestination(t *testing.T) {
	t.Parallel() // it waits out Retry-After holds
	eachStore(t, func(t *testing.T, st storeCase) { testRetryAfterHolds(t, st, 1) })
	t.Run("postgres-two-nodes", func(t *testing.T) { testRetryAfterHolds(t, storeCase{name: "postgres", url: pgtest.URL(t)}, 2) })
}

func testRetryAfterHolds(t *testing.T, st storeCase, nodes int) {
	sink := newStartSink(t, func(i int, w http.ResponseWriter) {
		if i == 0 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(200)
	})
	cfg := controlConfig(sink.url, "concurrency = 4\nretry = [\"5s\", \"5s\"]")
	if nodes > 1 {
		// flag is a destination that is only ever paused: the nodes say
		// when they read a pause, not when they read a hold.
		cfg = strings.Replace(cfg, `to = ["sink"]`, "topics = [\"push\"]\nto = [\"sink\"]", 1) +
			"\n[[destination]]\nname = \"flag\"\nurl = \"http://127.0.0.1:1/\"\ntimeout = \"5s\"\n\n[[route]]\nsource = \"gh\"\ntopics = [\"flag\"]\nto = [\"flag\"]\n"
	}
	config := writeConfig(t, t.TempDir(), cfg, st.config(5*time.Second))
	var procs []*proc
	for range nodes {
		procs = append(procs, start(t, config))
	}
	p := procs[0]
	postN(t, procs[:1], 1, 1)
	sink.waitFor(t, 1, 10*time.Second)
	// The 429's record is what holds the destination: wait for the API to say so.
	var s destJSON
	apptest.Until(t, 3*time.Second, func() error {
		if s = sinkState(t, p.addr); s.HeldUntil == nil {
			return fmt.Errorf("after a 429 with Retry-After: 3, GET /api/v1/destinations says %+v; want held_until", s)
		}
		return nil
	})
	if nodes > 1 {
		// The other nodes read the stored controls every ControlEvery
		// (250 ms) and say nothing of a hold they read, but they say when
		// they read a pause: flag paused after the hold was stored is read
		// with it, in one read of the controls.
		if code, raw := apiDo(t, p.addr, "POST", "/destinations/flag/pause", []byte(`{"reason": "a read of the controls shows"}`)); code != 200 {
			t.Fatalf("pause flag: %d %s", code, raw)
		}
		waitPauseRead(t, procs[1:], "flag")
	}
	postN(t, procs, 2, 6) // due now, but the destination is held (on every node)
	sink.waitFor(t, 6, 20*time.Second)
	sink.mu.Lock()
	starts := append([]time.Time(nil), sink.starts...)
	sink.mu.Unlock()
	gap := starts[1].Sub(starts[0])
	t.Logf("first attempt after the 429 came %v later; held until %v", gap.Round(time.Millisecond), s.HeldUntil)
	if gap < 2900*time.Millisecond {
		t.Errorf("an attempt %v after a 429 with Retry-After: 3; want none for 3 s", gap)
	}
	for _, p := range procs {
		p.stop(t)
	}
}
