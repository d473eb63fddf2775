package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
)

// replaySink is a destination on 127.0.0.1 that records the "n" of each
// body in the order the requests arrive and the most it handled at once.
// Each request costs the same however many came before.
type replaySink struct {
	url      string
	mu       sync.Mutex
	arrived  []int
	inFlight atomic.Int32
	maxIn    atomic.Int32
	want     int
	done     chan struct{}
}

func newReplaySink(t *testing.T, want int) *replaySink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &replaySink{url: "http://" + ln.Addr().String() + "/hook", want: want, done: make(chan struct{}), arrived: make([]int, 0, want)}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.inFlight.Add(1)
		defer s.inFlight.Add(-1)
		for m := s.maxIn.Load(); n > m && !s.maxIn.CompareAndSwap(m, n); m = s.maxIn.Load() {
		}
		var body struct {
			N int `json:"n"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&body)
		time.Sleep(time.Millisecond) // the receiver's own work, so sends overlap
		s.mu.Lock()
		s.arrived = append(s.arrived, body.N)
		if len(s.arrived) == s.want {
			close(s.done)
		}
		s.mu.Unlock()
		w.WriteHeader(200)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// The acceptance test of replay by query (issue 28): 10,000 delivered
// deliveries, replayed with `hookbox replay -since 1h -force` to a
// destination with concurrency = 4, arrive in the order they were
// accepted (none more than 3 places early) with at most 4 in flight; the
// dry run counts what the real run replays; without -force the command
// skips them all and says so, with what to add.
func TestEndToEnd_ReplayQueryInOrder(t *testing.T) { eachStore(t, testReplayQueryInOrder) }

func testReplayQueryInOrder(t *testing.T, st storeCase) {
	const total, concurrency = 10000, 4
	sink := newReplaySink(t, total)
	dir := t.TempDir()
	config := writeConfig(t, dir, fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "sink"
url = %q
timeout = "5s"
concurrency = %d

[[route]]
source = "gh"
to = ["sink"]
`, sink.url, concurrency), st.config(5*time.Second))

	// The deliveries, made through the store's API (10,000 signed webhooks
	// would test the receiver, not the replay), and delivered once.
	made := time.Now()
	db := st.open(t, dir)
	ctx := context.Background()
	deliveryOf := make([]uint64, total)
	var wg sync.WaitGroup
	var failed atomic.Value
	const workers = 64 // concurrent accepts share commits (group commit)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < total; i += workers {
				e := &app.Event{Source: "gh", ID: fmt.Sprintf("r-%05d", i), Topic: "push", ReceivedAt: time.Now(),
					Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}}, Body: fmt.Appendf(nil, `{"n": %d}`, i)}
				if dup, err := db.Accept(ctx, e, e.ReceivedAt.Add(time.Hour), &app.Plan{Direct: app.DirectTo("sink")}); err != nil || dup {
					failed.Store(fmt.Sprintf("accept %s: %v, %v", e.ID, dup, err))
					return
				}
				ds, err := db.EventDeliveries(ctx, e.Seq)
				if err != nil || len(ds) != 1 {
					failed.Store(fmt.Sprintf("deliveries of %s: %v, %v", e.ID, ds, err))
					return
				}
				deliveryOf[i] = ds[0].ID
			}
		})
	}
	wg.Wait()
	if msg := failed.Load(); msg != nil {
		t.Fatal(msg)
	}
	for from := 0; from < total; from += 500 {
		var recs []app.AttemptRecord
		for i := from; i < min(from+500, total); i++ {
			recs = append(recs, app.AttemptRecord{ID: deliveryOf[i], Attempt: &app.Attempt{Start: time.Now(), Status: 200}, State: app.Delivered})
		}
		for _, err := range db.RecordAttempts(ctx, recs) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	db.Close()
	t.Logf("%s: made %d delivered deliveries in %v", st.name, total, time.Since(made).Round(time.Millisecond))

	p := start(t, config)
	live := filepath.Join(dir, "live.toml")
	data, _ := os.ReadFile(config)
	os.WriteFile(live, bytes.Replace(data, []byte(`"127.0.0.1:0"`), []byte(`"`+p.addr+`"`), 1), 0o600)
	replay := func(args ...string) (string, string, int) {
		t.Helper()
		return runCLI(t, append([]string{"replay", "-config", live}, args...)...)
	}

	// The dry run says what the run does (issue 43: it said "would replay"
	// all of them, and the run then refused them; issue 44: the same split).
	skipped := fmt.Sprintf("%d match: none sent, %d delivered skipped (-force sends them too)\n", total, total)
	out, errOut, code := replay("-since", "1h", "-source", "gh")
	if code != 0 || !strings.HasPrefix(out, skipped) {
		t.Fatalf("replay of delivered ones without -force: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = replay("-since", "1h", "-source", "gh", "-dry-run")
	if code != 0 || !strings.HasPrefix(out, strings.Replace(skipped, "none sent", "none will be sent", 1)) {
		t.Fatalf("dry run without -force: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = replay("-since", "1h", "-source", "gh", "-dry-run", "-force")
	firstID := slices.Min(deliveryOf)
	first := fmt.Sprintf("#%d sink ← gh/r-%05d push (delivered)", firstID, slices.Index(deliveryOf, firstID))
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("%d match: %d delivered will be sent\n  %s, ", total, total, first)) || !strings.Contains(out, fmt.Sprintf("and %d more", total-10)) {
		t.Fatalf("dry run -force: exit %d\n%s%s", code, out, errOut)
	}
	began := time.Now()
	out, errOut, code = replay("-since", "1h", "-source", "gh", "-force")
	if code != 0 || !strings.HasPrefix(out, fmt.Sprintf("%d match: %d delivered sent\n  %s, ", total, total, first)) {
		t.Fatalf("replay -force: exit %d\n%s%s", code, out, errOut)
	}
	answered := time.Since(began)
	select {
	case <-sink.done:
	case <-time.After(3 * time.Minute):
		sink.mu.Lock()
		n := len(sink.arrived)
		sink.mu.Unlock()
		t.Fatalf("%d of %d replayed deliveries arrived\n%s", n, total, p.logText())
	}
	took := time.Since(began)
	p.stop(t)

	// Accept order: rank of each event's delivery among all of them.
	ids := slices.Clone(deliveryOf)
	slices.Sort(ids)
	rank := make(map[uint64]int, total)
	for r, id := range ids {
		rank[id] = r
	}
	sink.mu.Lock()
	arrived := slices.Clone(sink.arrived)
	sink.mu.Unlock()
	seen := make([]bool, total)
	moved, early := 0, 0
	for k, n := range arrived {
		if n < 0 || n >= total || seen[n] {
			t.Fatalf("arrival %d: event %d again or unknown", k, n)
		}
		seen[n] = true
		r := rank[deliveryOf[n]]
		if r != k {
			moved++
		}
		// With 4 in flight, a send starts only when all but 3 of those
		// before it have been answered.
		if r-k > concurrency-1 {
			t.Fatalf("arrival %d is delivery rank %d: %d places early, more than concurrency-1", k, r, r-k)
		}
		early = max(early, r-k)
	}
	if m := sink.maxIn.Load(); m > concurrency {
		t.Fatalf("%d requests in flight at the sink, concurrency is %d", m, concurrency)
	}
	t.Logf("%s: replay answered in %v; %d delivered in %v (%.0f/s); at most %d in flight; %d arrived off their exact place, none more than %d early",
		st.name, answered.Round(time.Millisecond), total, took.Round(time.Millisecond), float64(total)/took.Seconds(), sink.maxIn.Load(), moved, early)
}

// hookbox replay names deliveries by their events, needs -force for a
// delivered one (and says so), replays one event's by -event SOURCE/ID,
// and answers every mistake with a sentence that says what to do.
func TestReplayCommand_EventForceAndErrors(t *testing.T) {
	sink := newLedgerSink(t, 200)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["1h"]`))
	db := storeCase{name: "bbolt"}.open(t, dir)
	ctx := context.Background()
	var ids []uint64
	for i, state := range []app.DeliveryState{app.Delivered, app.Dead} {
		e := &app.Event{Source: "gh", ID: fmt.Sprintf("e-%d", i+1), Topic: "push", ReceivedAt: time.Now(), Body: []byte(`{"n": 1}`)}
		if _, err := db.Accept(ctx, e, e.ReceivedAt.Add(time.Hour), &app.Plan{Direct: app.DirectTo("sink")}); err != nil {
			t.Fatal(err)
		}
		ds, _ := db.EventDeliveries(ctx, e.Seq)
		if err := db.RecordAttempts(ctx, []app.AttemptRecord{{ID: ds[0].ID, Attempt: &app.Attempt{Start: time.Now(), Status: 200}, State: state}})[0]; err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ds[0].ID)
	}
	db.Close()
	p := start(t, config)
	live := filepath.Join(dir, "live.toml")
	data, _ := os.ReadFile(config)
	os.WriteFile(live, bytes.Replace(data, []byte(`"127.0.0.1:0"`), []byte(`"`+p.addr+`"`), 1), 0o600)
	replay := func(args ...string) (string, string, int) {
		t.Helper()
		return runCLI(t, append([]string{"replay", "-config", live}, args...)...)
	}
	delivered, dead := fmt.Sprint(ids[0]), fmt.Sprint(ids[1])
	dName, xName := "#"+delivered+" sink ← gh/e-1 push", "#"+dead+" sink ← gh/e-2 push"
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{nil, 2, "", "give one of -all, delivery ids, -event SOURCE/ID, or a query"},
		{[]string{"-all", "7"}, 2, "", "give one of -all"},
		{[]string{"abc"}, 2, "", `"abc" is not a delivery id`},
		{[]string{"-event", "e-1"}, 2, "", "give the source and the event's id as SOURCE/ID"},
		{[]string{"-dry-run", "-all"}, 2, "", "-dry-run does not go with -all"},
		{[]string{"-topic", "push"}, 1, "", "give at least one of since, until, source, destination or status"},
		{[]string{"-since", "yesterday"}, 2, "", `-since "yesterday": give a time`},
		{[]string{"-since", "1h", "-status", "pending"}, 1, "", `status "pending": use dead, delivered or any`},
		{[]string{"-event", "gh/nope"}, 1, "", "no event gh/nope is stored"},
		// Named one by one, the server says what it does with each
		// (issue 44: the CLI decided it from the event's deliveries).
		{[]string{"987654"}, 1, "1 not found\n  not found #987654 (check the id", ""},
		{[]string{delivered}, 1, "1 matches: none sent, 1 delivered skipped (-force sends it too)\n  skipped   " + dName + " (delivered ", ""},
		{[]string{"-event", "gh/e-1"}, 1, "1 matches: none sent, 1 delivered skipped (-force sends it too)\n  skipped   " + dName + " (delivered ", ""},
		{[]string{"-event", "gh/e-2", "-dry-run"}, 0, "1 matches: 1 dead will be sent\n  will send " + xName + "\n", ""},
		{[]string{"-since", "1h", "-status", "dead", "-dry-run"}, 0, "1 matches: 1 dead will be sent\n  " + xName + " (dead)\n", ""},
		{[]string{"-event", "gh/e-2"}, 0, "1 matches: 1 dead sent\n  sent      " + xName + "\n", ""},
		{[]string{"-force", delivered}, 0, "1 matches: 1 delivered sent\n  sent      " + dName + "\n", ""},
		{[]string{"-source", "gh", "-status", "dead"}, 0, "nothing matched", ""},
	} {
		out, errOut, code := replay(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) || tc.err == "" && errOut != "" {
			t.Errorf("replay %q: exit %d\nstdout %q\nstderr %q\nwant exit %d, %q, %q", tc.args, code, out, errOut, tc.code, tc.out, tc.err)
		}
	}
	out, _, code := replay("-since", "1h", "-status", "any", "-dry-run", "-json")
	var a struct {
		Matched *int `json:"matched"`
	}
	if err := json.Unmarshal([]byte(out), &a); code != 0 || err != nil || a.Matched == nil {
		t.Errorf("-json: exit %d, %q (%v)", code, out, err)
	}
	p.stop(t)
}

// The dry run of a query prints the split its run prints, in the future
// tense (issue 44: "would replay 6", then the run refused 5 of them): with
// delivered, dead and pending deliveries, the dead ones are sent, the
// delivered ones skipped unless -force and the pending one left alone, on
// both stores.
func TestReplayCommand_DryRunSplitIsTheRuns(t *testing.T) {
	t.Parallel() // waits on deliveries and retries: it overlaps the other waiting tests
	eachStore(t, testReplayDryRunSplit)
}

func testReplayDryRunSplit(t *testing.T, st storeCase) {
	sink := newLedgerSink(t, 200)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["1h"]`), st.config(2*time.Second))
	db := st.open(t, dir)
	ctx := context.Background()
	states := []app.DeliveryState{app.Delivered, app.Dead, app.Delivered, app.Delivered, app.Pending, app.Delivered, app.Delivered}
	for i, state := range states {
		e := &app.Event{Source: "gh", ID: fmt.Sprintf("s-%d", i+1), Topic: "push", ReceivedAt: time.Now(), Body: []byte(`{"n": 1}`)}
		if _, err := db.Accept(ctx, e, e.ReceivedAt.Add(time.Hour), &app.Plan{Direct: app.DirectTo("sink")}); err != nil {
			t.Fatal(err)
		}
		ds, _ := db.EventDeliveries(ctx, e.Seq)
		rec := app.AttemptRecord{ID: ds[0].ID, Attempt: &app.Attempt{Start: time.Now(), Status: 200}, State: state}
		if state == app.Pending { // failed once, its retry an hour away
			rec.Attempt.Status, rec.Due = 500, time.Now().Add(time.Hour)
		}
		if err := db.RecordAttempts(ctx, []app.AttemptRecord{rec})[0]; err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	p := start(t, config)
	live := filepath.Join(dir, "live.toml")
	data, _ := os.ReadFile(config)
	os.WriteFile(live, bytes.Replace(data, []byte(`"127.0.0.1:0"`), []byte(`"`+p.addr+`"`), 1), 0o600)
	replay := func(args ...string) string {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"replay", "-config", live}, args...)...)
		if code != 0 || errOut != "" {
			t.Fatalf("replay %q: exit %d\n%s%s", args, code, out, errOut)
		}
		return out
	}
	split := func(out string) string { first, _, _ := strings.Cut(out, "\n"); return first }
	pending := ", 1 pending left alone (on its way already)"
	if forced, want := split(replay("-since", "2h", "-dry-run", "-force")), "7 match: 1 dead and 5 delivered will be sent"+pending; forced != want {
		t.Fatalf("dry run -force: %q, want %q", forced, want)
	}
	dry := split(replay("-since", "2h", "-dry-run"))
	if want := "7 match: 1 dead will be sent, 5 delivered skipped (-force sends them too)" + pending; dry != want {
		t.Fatalf("dry run: %q, want %q", dry, want)
	}
	run := split(replay("-since", "2h"))
	if run != strings.Replace(dry, "will be sent", "sent", 1) {
		t.Fatalf("dry run %q, run %q: they disagree", dry, run)
	}
	p.stop(t)
}
