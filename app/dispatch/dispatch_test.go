package dispatch_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"hookbox/app"
	"hookbox/app/alert"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/dispatch"
	"hookbox/app/httpsend"
	"hookbox/app/receive"
	"hookbox/storage/bboltstore"
)

func TestDispatcher_RetryThenDeliver(t *testing.T) {
	s := newSink(t, 500, 502, 500, 200)
	h := newHarness(t, destsConfig(`["5ms", "5ms", "5ms", "5ms"]`, s.URL))
	body := `{"ref": "main", "x": "a/b & <c>"}`
	h.send(t, "evt-1", body)
	d := h.waitState(t, "evt-1", 0, app.Delivered)
	_, attempts, err := h.db.Delivery(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(attempts) != 4 || d.Attempts != 4 {
		t.Fatalf("%d attempts recorded (delivery says %d), want 4", len(attempts), d.Attempts)
	}
	for i, want := range []int{500, 502, 500, 200} {
		a := attempts[i]
		if a.N != i+1 || a.Status != want || a.Duration <= 0 || a.Start.IsZero() {
			t.Errorf("attempt %d = %+v, want status %d", i+1, a, want)
		}
		if wantBody := fmt.Sprintf("answer %d to attempt %d", want, i+1); string(a.Response) != wantBody {
			t.Errorf("attempt %d response %q, want %q", i+1, a.Response, wantBody)
		}
		if (want == 200) != (a.Error == "") {
			t.Errorf("attempt %d error %q", i+1, a.Error)
		}
	}

	// Every request: the original body byte-exact, the original headers,
	// one stable webhook-id, a signature the Standard Webhooks library accepts.
	wh, err := standardwebhooks.NewWebhook(destSecret)
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.got[0].Header.Get("webhook-id")
	for i, r := range s.got {
		if string(s.bodys[i]) != body {
			t.Errorf("request %d body %q, want %q", i, s.bodys[i], body)
		}
		if got := r.Header.Get("webhook-id"); got != id || !strings.HasPrefix(id, "msg_") {
			t.Errorf("request %d webhook-id %q, want %q", i, got, id)
		}
		if err := wh.Verify(s.bodys[i], r.Header); err != nil {
			t.Errorf("request %d: Standard Webhooks verify: %v", i, err)
		}
		if r.Header.Get("X-Hub-Signature-256") == "" || r.Header.Get("X-GitHub-Delivery") != "evt-1" {
			t.Errorf("request %d lacks the original provider headers: %v", i, r.Header)
		}
		if r.Header.Get("X-Hookbox-Attempt") != fmt.Sprint(i+1) || r.Header.Get("X-Hookbox-Topic") != "push" ||
			r.Header.Get("X-Hookbox-Source") != "gh" || r.Header.Get("X-Api-Key") != "k-0" {
			t.Errorf("request %d hookbox headers: %v", i, r.Header)
		}
		if r.Header.Get("Content-Type") != "application/json" || !strings.HasPrefix(r.UserAgent(), "hookbox/") {
			t.Errorf("request %d content type %q, user agent %q", i, r.Header.Get("Content-Type"), r.UserAgent())
		}
	}
}

func TestDispatcher_DeadAlertReplay(t *testing.T) {
	s := newSink(t, 500)
	var alerts []string
	var amu sync.Mutex
	alertSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		amu.Lock()
		alerts = append(alerts, string(b))
		amu.Unlock()
	}))
	defer alertSrv.Close()
	h := newHarness(t, destsConfig(`["2ms", "2ms", "2ms"]`, s.URL)+
		fmt.Sprintf("[alerts]\ndead_letters_over = 0\nurl = %q\n", alertSrv.URL))
	alerter := alert.New(h.cfg, h.db)
	ctx := context.Background()

	h.send(t, "evt-dead", `{"n": 1}`)
	d := h.waitState(t, "evt-dead", 0, app.Dead)
	if d.Attempts != 4 || s.requests() != 4 {
		t.Fatalf("dead after %d attempts (%d requests), want 4", d.Attempts, s.requests())
	}
	dead, total, err := h.db.DeadLetters(context.Background(), 0, 10)
	if err != nil || total != 1 || len(dead) != 1 || dead[0].ID != d.ID {
		t.Fatalf("DeadLetters = %+v, %d, %v", dead, total, err)
	}
	alerter.Check(ctx)
	alerter.Check(ctx) // still over: no second message
	amu.Lock()
	if len(alerts) != 1 || !strings.Contains(alerts[0], `"text":"hookbox: 1 dead deliveries`) {
		t.Fatalf("alerts = %q, want one message", alerts)
	}
	amu.Unlock()

	// The sink recovers; replay delivers, keeping the history.
	s.setPlan(200)
	if err := h.db.Replay(context.Background(), d.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.disp.Wake()
	d = h.waitState(t, "evt-dead", 0, app.Delivered)
	if d.Attempts != 5 {
		t.Fatalf("attempts after replay = %d, want 5", d.Attempts)
	}
	alerter.Check(ctx)
	amu.Lock()
	if len(alerts) != 2 || !strings.Contains(alerts[1], "back to 0") {
		t.Fatalf("alerts = %q, want a recovery message", alerts)
	}
	amu.Unlock()
}

func TestDispatcher_GoneIsDeadAtOnce(t *testing.T) {
	s := newSink(t, 410)
	h := newHarness(t, destsConfig(`["2ms", "2ms"]`, s.URL))
	h.send(t, "evt-gone", `{}`)
	if d := h.waitState(t, "evt-gone", 0, app.Dead); d.Attempts != 1 || d.LastStatus != 410 {
		t.Fatalf("delivery = %+v, want dead after one 410", d)
	}
}

func TestDispatcher_RetryAfter(t *testing.T) {
	s := newSink(t, 429, 200)
	h := newHarness(t, destsConfig(`["1ms", "5s"]`, s.URL))
	start := time.Now()
	h.send(t, "evt-429", `{}`)
	<-s.hits
	// The schedule says ~1ms; Retry-After says 1s (under the 5s cap).
	var d *app.Delivery
	if !h.waitFor(5*time.Second, func() bool { d = h.deliveries(t, "evt-429")[0]; return d.Attempts == 1 }) {
		t.Fatal("first attempt not recorded")
	}
	if wait := d.Due.Sub(start); wait < 900*time.Millisecond || wait > 3*time.Second {
		t.Fatalf("next attempt due after %v, want about 1s (Retry-After)", wait)
	}
	h.waitState(t, "evt-429", 0, app.Delivered)
}

// One event, three destinations, one of them hanging: the healthy two are
// delivered while the third is still waiting.
func TestDispatcher_FanOut(t *testing.T) {
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(503)
	}))
	defer hang.Close()
	defer close(release)
	a, b := newSink(t, 200), newSink(t, 200)
	h := newHarness(t, destsConfig(`["1h"]`, a.URL, hang.URL, b.URL))
	for i := range 5 {
		h.send(t, fmt.Sprint("fan-", i), fmt.Sprintf(`{"i": %d}`, i))
	}
	for i := range 5 {
		h.waitState(t, fmt.Sprint("fan-", i), 0, app.Delivered)
		h.waitState(t, fmt.Sprint("fan-", i), 2, app.Delivered)
		if d := h.deliveries(t, fmt.Sprint("fan-", i))[1]; d.State != app.Pending || d.Attempts != 0 {
			t.Fatalf("hanging destination's delivery = %+v, want pending without an attempt", d)
		}
	}
}

func TestDispatcher_Unrouted(t *testing.T) {
	s := newSink(t, 200)
	h := newHarness(t, destsConfig(`["1ms"]`, s.URL))
	in := apptest.Signed(t, "github", "gh-secret", []byte(`{}`), "", "other-topic", "issues", time.Now())
	if res, err := h.recv.Receive(context.Background(), "gh", in); err != nil || res.Outcome != app.Accepted {
		t.Fatalf("Receive = %+v, %v", res, err)
	}
	if ds := h.deliveries(t, "other-topic"); len(ds) != 0 {
		t.Fatalf("unrouted event has deliveries %+v", ds)
	}
	if rows, _, err := h.db.ListEvents(context.Background(), app.EventQuery{Status: "unrouted", Limit: 10}); err != nil || len(rows) != 1 {
		t.Fatalf("unrouted = %d (%v), want 1", len(rows), err)
	}
}

// BenchmarkDispatch measures deliveries per second to a local sink that
// answers 200 at once, with 64 sends in flight: with a Content-Length
// (Go's server for a short answer), chunked in one write (as Node's
// res.end does), and chunked after a Flush (two writes, as streaming
// frameworks and nginx with gzip answer). They drain at about the same
// rate: an attempt ends with its answer, whatever its framing.
// cpu-µs/delivery is this process's CPU (dispatcher, store and sink).
func BenchmarkDispatch(b *testing.B) {
	for _, framing := range []string{"ContentLength", "Chunked", "ChunkedFlush"} {
		b.Run(framing, func(b *testing.B) { benchmarkDispatch(b, framing) })
	}
}

func benchmarkDispatch(b *testing.B, framing string) {
	var n atomic.Int64
	done := make(chan struct{})
	var conns atomic.Int64
	sinkSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch framing {
		case "Chunked": // Go's server then leaves the length out
			w.Header().Set("Transfer-Encoding", "chunked")
			io.WriteString(w, "ok")
		case "ChunkedFlush":
			io.WriteString(w, "ok")
			w.(http.Flusher).Flush()
			io.WriteString(w, ".")
		default:
			io.WriteString(w, "ok")
		}
		if n.Add(1) == int64(b.N) {
			close(done)
		}
	}))
	sinkSrv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	sinkSrv.Start()
	defer sinkSrv.Close()
	toml := strings.Replace(destsConfig(`["1s"]`, sinkSrv.URL), "timeout = \"2s\"", "timeout = \"2s\"\nconcurrency = 64", 1)
	cfg, err := config.Parse("bench.toml", toml, nil)
	if err != nil {
		b.Fatal(err)
	}
	db, err := bboltstore.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	// Fill the outbox first, then time the drain.
	recv := receive.New(cfg, db)
	body := []byte(fmt.Sprintf(`{"pad": %q}`, strings.Repeat("x", 2000)))
	inParallel(b, 64, b.N, func(i int) error {
		_, err := recv.Receive(context.Background(), "gh", apptest.Signed(b, "github", "gh-secret", body, "", fmt.Sprint("b-", i), "push", time.Now()))
		return err
	})
	disp := dispatch.New(cfg, db, httpsend.New(cfg, "dev"))
	ctx, cancel := context.WithCancel(context.Background())
	cpu0 := apptest.CPUTime()
	b.ResetTimer()
	go disp.Run(ctx, context.Background())
	<-done
	b.StopTimer()
	cpu := apptest.CPUTime() - cpu0
	cancel()
	disp.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/delivery")
	b.ReportMetric(float64(conns.Load()), "conns")
}

// Without failures every event goes out exactly once: a dispatch pass that
// read the outbox just before a send's attempt was recorded must not send
// the delivery again once that send's lease is gone.
func TestDispatcher_NoRepeatWithoutFailures(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	var total atomic.Int64
	const n = 6000
	all := make(chan struct{}) // closed when every event arrived
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		id := r.Header.Get("X-GitHub-Delivery")
		seen[id]++
		if seen[id] == 1 && len(seen) == n {
			close(all)
		}
		mu.Unlock()
		total.Add(1)
	}))
	t.Cleanup(dest.Close)
	toml := strings.Replace(destsConfig(`["1s"]`, dest.URL), "timeout = \"2s\"", "timeout = \"2s\"\nconcurrency = 64", 1)
	h := newHarness(t, toml)
	inParallel(t, 32, n, func(i int) error { return h.accept(t, fmt.Sprint("once-", i), `{"n": 1}`) })
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		mu.Lock()
		got := len(seen)
		mu.Unlock()
		t.Fatalf("%d of %d events delivered", got, n)
	}
	h.stop() // no send in flight any more
	if extra := total.Load() - n; extra != 0 {
		t.Fatalf("%d repeated deliveries for %d events, none failed", extra, n)
	}
}
