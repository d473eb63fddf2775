package cli_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// The attempt number a destination is told never passes its retry steps
// plus one, however often it is tried early (issue 43: a command
// destination with 2 retries saw HOOKBOX_ATTEMPT=4): end to end, on both
// stores, for a command (HOOKBOX_ATTEMPT) and an HTTP destination
// (X-Hookbox-Attempt) with retry = ["10ms", "1h"]. Four events fail their
// first attempt and their retry and wait an hour; twice an event that
// goes through starts the recovery walk, which sends the four early
// again and fails; then the destination's recovery probe (30 s after its
// last attempt: the probe interval has no config key) sends one of them
// and fails; then it answers again and every waiting event goes through,
// once. The early sends and the probe keep each delivery's due time; the
// API marks the probe, and only it, `probe: true`.
func TestEndToEnd_AttemptNumberWithProbes(t *testing.T) {
	t.Parallel() // mostly waiting for the probe: overlaps the other waiting tests
	eachStore(t, func(t *testing.T, st storeCase) {
		t.Parallel() // the same wait on the other store
		testAttemptNumberWithProbes(t, st)
	})
}

// probeScript notes "event attempt" for each run, then takes the event
// (a line with its id) when it is an ok- event or the file up exists,
// else exits 75.
const probeScript = `#!/bin/sh
echo "$HOOKBOX_EVENT_ID $HOOKBOX_ATTEMPT" >> "$1/seen"
case "$HOOKBOX_EVENT_ID" in ok-*) ;; *) [ -e "$1/up" ] || { echo down >&2; exit 75; } ;; esac
echo "$HOOKBOX_EVENT_ID" >> "$1/taken"
`

// attemptSink is an HTTP destination like probeScript: it notes each
// request's event id and X-Hookbox-Attempt, and answers 200 to ok- events
// or once up, else 503.
type attemptSink struct {
	up    atomic.Bool
	mu    sync.Mutex
	seen  []string // "event attempt", in order
	taken []string // the events it answered 200
}

func (s *attemptSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Hookbox-Event-Id")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, id+" "+r.Header.Get("X-Hookbox-Attempt"))
	if !strings.HasPrefix(id, "ok-") && !s.up.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	s.taken = append(s.taken, id)
}

// lines returns copies of what it saw and took.
func (s *attemptSink) lines() (seen, taken []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen), slices.Clone(s.taken)
}

// probeDest is one destination of the test: how to post to it and what
// it saw.
type probeDest struct {
	name, topic string
	lines       func() (seen, taken []string)
	setUp       func()
}

func testAttemptNumberWithProbes(t *testing.T, st storeCase) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "probe.sh")
	if err := os.WriteFile(prog, []byte(probeScript), 0o755); err != nil {
		t.Fatal(err)
	}
	sink := &attemptSink{}
	srv := httptest.NewServer(sink)
	t.Cleanup(srv.Close)
	readLines := func(name string) []string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		if len(b) == 0 {
			return nil
		}
		return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	dests := []probeDest{
		{name: "cmd", topic: "c", lines: func() ([]string, []string) { return readLines("seen"), readLines("taken") },
			setUp: func() {
				if err := os.WriteFile(filepath.Join(dir, "up"), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "web", topic: "w", lines: sink.lines, setUp: func() { sink.up.Store(true) }},
	}
	cfg := fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "cmd"
command = [%q, %q]
retry = ["10ms", "1h"]

[[route]]
source = "gh"
topics = ["c"]
to = ["cmd"]

[[destination]]
name = "web"
url = %q
timeout = "2s"
retry = ["10ms", "1h"]

[[route]]
source = "gh"
topics = ["w"]
to = ["web"]
`, prog, dir, srv.URL)
	p := start(t, writeConfig(t, t.TempDir(), cfg, st.config(15*time.Second)))

	// waiting returns the events that wait for d; due holds their due
	// times once their retries failed.
	waiting := func(d probeDest) []string {
		// Four: the fourth early send that fails in a row ends the
		// walk at once, so that the next success starts a new one.
		return []string{d.topic + "-1", d.topic + "-2", d.topic + "-3", d.topic + "-4"}
	}
	due := map[string]time.Time{}
	// waitAll waits until each waiting event of d has attempts attempts
	// and is in state.
	waitAll := func(d probeDest, state string, attempts int) map[string]deliveryOut {
		got := map[string]deliveryOut{}
		for _, id := range waiting(d) {
			got[id] = waitDelivery(t, p.addr, id, state, attempts)
		}
		return got
	}
	// keptDue checks that the early sends left each waiting delivery of d
	// due when its retry made it due.
	keptDue := func(d probeDest, ds map[string]deliveryOut, after string) {
		for id, dl := range ds {
			if dl.Due == nil || !dl.Due.Equal(due[id]) {
				t.Errorf("%s: %s is due at %v after %s; want %v, as its retry left it", d.name, id, dl.Due, after, due[id])
			}
		}
	}

	for _, d := range dests {
		for _, id := range waiting(d) {
			postTopic(t, p.addr, d.topic, id, fmt.Sprintf(`{"id": %q}`, id))
		}
	}
	for _, d := range dests {
		for id, dl := range waitAll(d, "pending", 2) {
			if dl.Due == nil || time.Until(*dl.Due) < 40*time.Minute { // 1h ± 20% jitter
				t.Fatalf("%s: %s after its retry is due at %v; want its 1h step", d.name, id, dl.Due)
			}
			due[id] = *dl.Due
		}
	}
	// Twice a success while the destination looks down sends the waiting
	// ones early, and they fail again.
	for round := 1; round <= 2; round++ {
		for _, d := range dests {
			ok := fmt.Sprintf("ok-%s%d", d.topic, round)
			postTopic(t, p.addr, d.topic, ok, fmt.Sprintf(`{"id": %q}`, ok))
		}
		for _, d := range dests {
			waitDelivery(t, p.addr, fmt.Sprintf("ok-%s%d", d.topic, round), "delivered", 1)
			keptDue(d, waitAll(d, "pending", 2+round), fmt.Sprintf("early send %d", round))
			checkSeen(t, d)
		}
	}
	// Then the probe: 30 s after the last attempt, one waiting delivery.
	for _, d := range dests {
		var probed string
		var ds map[string]deliveryOut
		apptest.Until(t, 60*time.Second, func() error {
			ds = map[string]deliveryOut{}
			for _, id := range waiting(d) {
				ds[id] = deliveryOf(t, p.addr, id)
				if n := len(ds[id].History); n > 0 && ds[id].History[n-1].Probe && ds[id].State == "pending" {
					probed = id
				}
			}
			if probed == "" {
				return fmt.Errorf("%s: no failed probe in %+v", d.name, ds)
			}
			return nil
		})
		keptDue(d, ds, "the probe")
		for id, dl := range ds {
			probes := 0
			for i, a := range dl.History {
				if a.Probe {
					probes++
				}
				if a.Probe != (id == probed && i == len(dl.History)-1) {
					t.Errorf("%s: %s's attempt %d has probe %v; want only the probe's", d.name, id, a.N, a.Probe)
				}
			}
			if probes > 1 {
				t.Errorf("%s: %s has %d probes; want 1 (the next is 60 s later)", d.name, id, probes)
			}
		}
	}
	// It answers again: the next success walks every waiting one through.
	for _, d := range dests {
		d.setUp()
		postTopic(t, p.addr, d.topic, "ok-"+d.topic+"3", `{"id": "last"}`)
	}
	for _, d := range dests {
		for _, id := range waiting(d) {
			apptest.Until(t, 30*time.Second, func() error {
				if dl := deliveryOf(t, p.addr, id); dl.State != "delivered" {
					return fmt.Errorf("%s: %s is %s after %d attempts; want delivered", d.name, id, dl.State, dl.Attempts)
				}
				return nil
			})
		}
		checkSeen(t, d)
		_, taken := d.lines()
		for _, id := range append(waiting(d), "ok-"+d.topic+"1", "ok-"+d.topic+"2", "ok-"+d.topic+"3") {
			if c := strings.Count(strings.Join(taken, "\n")+"\n", id+"\n"); c != 1 {
				t.Errorf("%s: %s taken %d times; want once (%q)", d.name, id, c, taken)
			}
		}
	}
	p.stop(t)
}

// checkSeen checks that every attempt number d was told is 1 to 3: its 2
// retries plus one, the early sends and the probes included.
func checkSeen(t *testing.T, d probeDest) {
	t.Helper()
	seen, _ := d.lines()
	for _, s := range seen {
		id, n, _ := strings.Cut(s, " ")
		if a, err := strconv.Atoi(n); err != nil || a < 1 || a > 3 {
			t.Errorf("%s: %s was told attempt %q; want 1 to 3 (2 retries plus one), early sends and probes included\nall: %q", d.name, id, n, seen)
		}
	}
}
