package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/storage/postgres/pgtest"
)

// reloadLoad posts signed webhooks with ids r-0, r-1, … at about rate
// per second from a few workers until stop is closed, noting when each
// was sent and every request that did not get 200 accepted.
type reloadLoad struct {
	addr   string
	next   atomic.Int64
	failed atomic.Int64
	mu     sync.Mutex
	sent   map[int]time.Time // n → when its request began
	fails  []string
	wg     sync.WaitGroup
}

func startReloadLoad(addr string, rate int, stop <-chan struct{}) *reloadLoad {
	l := &reloadLoad{addr: addr, sent: map[int]time.Time{}}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	slots := make(chan struct{})
	go func() {
		defer tick.Stop()
		defer close(slots)
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				select {
				case slots <- struct{}{}:
				case <-stop:
					return
				}
			}
		}
	}()
	client := &http.Client{Timeout: 10 * time.Second}
	for range 16 {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for range slots {
				l.post(client, int(l.next.Add(1)-1))
			}
		}()
	}
	return l
}

func (l *reloadLoad) post(client *http.Client, n int) {
	body := fmt.Appendf(nil, `{"n": %d}`, n)
	req, _ := http.NewRequest("POST", "http://"+l.addr+"/in/gh", bytes.NewReader(body))
	for k, v := range githubHeaders(body, e2eSecret, fmt.Sprintf("r-%d", n)) {
		req.Header.Set(k, v)
	}
	l.mu.Lock()
	l.sent[n] = time.Now()
	l.mu.Unlock()
	resp, err := client.Do(req)
	if err == nil {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !bytes.Contains(raw, []byte(`"accepted"`)) {
			err = fmt.Errorf("%d %s", resp.StatusCode, raw)
		}
	}
	if err != nil {
		l.failed.Add(1)
		l.mu.Lock()
		l.fails = append(l.fails, fmt.Sprintf("r-%d: %v", n, err))
		l.mu.Unlock()
	}
}

// reloadConfig is the reload test's config: source gh, destination
// "old" routed from it, and extra.
func reloadConfig(t *testing.T, dir string, st storeCase, oldURL, extra string) string {
	t.Helper()
	return writeConfig(t, dir, fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "old"
url = %q
concurrency = 16
timeout = "5s"

[[route]]
name = "to-old"
source = "gh"
to = ["old"]
%s%s`, oldURL, extra, st.config(5*time.Second)))
}

// editReloadConfig rewrites reloadConfig's file as both reload tests edit
// it: extra, a destination "new" at newURL with a route of gh to it, and a
// larger max_body_bytes (which waits for a restart).
func editReloadConfig(t *testing.T, dir string, st storeCase, oldURL, newURL, extra string) {
	t.Helper()
	config := reloadConfig(t, dir, st, oldURL, extra+fmt.Sprintf(`
[[destination]]
name = "new"
url = %q
timeout = "5s"

[[route]]
name = "to-new"
source = "gh"
to = ["new"]
`, newURL))
	data, _ := os.ReadFile(config)
	os.WriteFile(config, bytes.Replace(data, []byte("max_body_bytes = 4096"), []byte("max_body_bytes = 8192"), 1), 0o600)
}

// uniqueNs returns the sink's event numbers as a set, and the numbers
// it received more than once.
func uniqueNs(s *startSink) (set map[int]bool, repeated []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	set = map[int]bool{}
	for _, n := range s.ns {
		if set[n] {
			repeated = append(repeated, n)
		}
		set[n] = true
	}
	return set, repeated
}

// pageGet fetches a page of the server at addr with the e2e login.
func pageGet(t *testing.T, addr, path string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	return string(raw)
}

// Under about 500 webhooks/s, a reload that adds a destination and a
// route to it loses, repeats and fails nothing: every event reaches the
// old destination once, and every event sent after the reload's log
// line reaches the new one once, the first within a second of SIGHUP.
// What cannot change live is named. A config with a typo is then
// refused: the log and the page say why, and the old one keeps serving.
func TestEndToEnd_Reload(t *testing.T) {
	eachStore(t, func(t *testing.T, st storeCase) {
		dir := t.TempDir()
		oldSink, newSink := newStartSink(t, nil), newStartSink(t, nil)
		config := reloadConfig(t, dir, st, oldSink.url, "")
		p := start(t, config)

		stop := make(chan struct{})
		load := startReloadLoad(p.addr, 500, stop)
		// A second of load on the old config, then the new one.
		apptest.Eventually(t, 30*time.Second, "500 events sent", func() bool { return load.next.Load() >= 500 })
		// The same file, with a destination and a route more, and a
		// larger max_body_bytes (which waits for a restart).
		editReloadConfig(t, dir, st, oldSink.url, newSink.url, "")
		hup := time.Now()
		p.cmd.Process.Signal(syscall.SIGHUP)
		waitLog(t, p, "config reloaded", 10*time.Second)
		reloaded := time.Now()
		// The new route takes events within a second of the signal.
		newSink.waitFor(t, 1, 10*time.Second)
		newSink.mu.Lock()
		first := newSink.starts[0]
		newSink.mu.Unlock()
		if took := first.Sub(hup); took > time.Second {
			t.Errorf("the new destination's first request came %v after SIGHUP; want within 1s", took)
		}
		// A second of load on the new config.
		sentAtReload := int(load.next.Load())
		apptest.Eventually(t, 30*time.Second, "500 more events sent", func() bool { return int(load.next.Load()) >= sentAtReload+500 })
		close(stop)
		load.wg.Wait()
		total := int(load.next.Load())

		if n := load.failed.Load(); n > 0 {
			t.Errorf("%d requests failed under the reload, the first: %v", n, load.fails[:min(len(load.fails), 5)])
		}
		line := logLine(p.logText(), "config reloaded")
		for _, want := range []string{"destinations_added=1", "routes_added=1", "sources_added=0", "destinations_removed=0",
			"restart_to_apply=server.max_body_bytes", "level=INFO"} {
			if !strings.Contains(line, want) {
				t.Errorf("the reload's log line lacks %s: %s", want, line)
			}
		}
		// Every event reaches the old destination once; every event sent
		// after the reload's line reaches the new one once.
		var afterReload []int
		load.mu.Lock()
		for n, at := range load.sent {
			if at.After(reloaded) {
				afterReload = append(afterReload, n)
			}
		}
		load.mu.Unlock()
		oldSink.waitFor(t, total, 60*time.Second)
		apptest.Eventually(t, 60*time.Second, "every event sent after the reload at the new destination", func() bool {
			set, _ := uniqueNs(newSink)
			for _, n := range afterReload {
				if !set[n] {
					return false
				}
			}
			return true
		})
		oldSet, oldRepeated := uniqueNs(oldSink)
		if len(oldSet) != total || len(oldRepeated) > 0 {
			t.Errorf("old destination: %d distinct events of %d, repeated %v", len(oldSet), total, oldRepeated)
		}
		if _, repeated := uniqueNs(newSink); len(repeated) > 0 {
			t.Errorf("new destination: repeated %v", repeated)
		}
		t.Logf("%d events, %d after the reload's line; SIGHUP to the new destination's first request: %v",
			total, len(afterReload), first.Sub(hup))

		// A typo: refused, with the file, key and reason in the log at
		// ERROR, on the page and in the API; the old config keeps serving.
		good, _ := os.ReadFile(config)
		typo := strings.Replace(string(good), "concurrency = 16", "concurency = 16", 1)
		os.WriteFile(config, []byte(typo), 0o600)
		p.cmd.Process.Signal(syscall.SIGHUP)
		waitLog(t, p, "config refused", 10*time.Second)
		refusedLine := logLine(p.logText(), "config refused")
		if !strings.Contains(refusedLine, "level=ERROR") || !strings.Contains(refusedLine, config+":") || !strings.Contains(refusedLine, ".concurency: unknown key; did you mean concurrency?") {
			t.Errorf("the refusal's log line: %s", refusedLine)
		}
		page := pageGet(t, p.addr, "/")
		if !strings.Contains(page, `id="config-refused"`) || !strings.Contains(page, ".concurency: unknown key") {
			t.Errorf("the overview does not show the refusal:\n%s", page)
		}
		if !strings.Contains(page, "<code>hookbox reload</code>") {
			t.Errorf("the refusal does not say how to reload from the box (hookbox reload):\n%s", page)
		}
		if !strings.Contains(page, `id="config-loaded"`) || !strings.Contains(page, config) {
			t.Errorf("the overview does not say which config runs:\n%s", page)
		}
		_, raw := apiDo(t, p.addr, "GET", "/config", nil)
		var cj struct {
			Path           string   `json:"path"`
			RestartToApply []string `json:"restart_to_apply"`
			Destinations   int      `json:"destinations"`
			Refused        *struct {
				Errors []string `json:"errors"`
			} `json:"refused"`
		}
		if err := json.Unmarshal(raw, &cj); err != nil || cj.Refused == nil || len(cj.Refused.Errors) == 0 ||
			!strings.Contains(cj.Refused.Errors[0], ".concurency: unknown key") || cj.Destinations != 2 || cj.Path != config {
			t.Errorf("GET /api/v1/config: %s (%v)", raw, err)
		}
		// Still serving the reloaded config: an event goes to both.
		body := []byte(`{"n": 1000000}`)
		if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "after-typo")); r.code != 200 {
			t.Fatalf("after the refused config: %d %v", r.code, r.body)
		}
		oldSink.waitFor(t, total+1, 30*time.Second)
		apptest.Eventually(t, 30*time.Second, "the event after the refusal at the new destination", func() bool {
			set, _ := uniqueNs(newSink)
			return set[1000000]
		})
		p.stop(t)
	})
}

// logLine returns the first line of log that contains want.
func logLine(log, want string) string {
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, want) {
			return l
		}
	}
	return ""
}

// okSink answers 503 until ok is set, then 200, counting attempts and,
// per X-GitHub-Delivery, the 200s.
type okSink struct {
	url      string
	ok       atomic.Bool
	attempts atomic.Int64
	mu       sync.Mutex
	took     map[string]int
}

func newOKSink(t *testing.T) *okSink {
	s := &okSink{took: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.attempts.Add(1)
		if !s.ok.Load() {
			w.WriteHeader(503)
			return
		}
		s.mu.Lock()
		s.took[r.Header.Get("X-GitHub-Delivery")]++
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/hook"
	return s
}

func (s *okSink) count(id string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.took[id] }

// nodeConfig is a cluster node's config: destinations y and, with x,
// x, each with a route from gh.
func nodeConfig(t *testing.T, dir, dbURL, xURL, yURL string, x bool) string {
	t.Helper()
	extra := fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "y"
url = %q
timeout = "1s"

[[route]]
name = "to-y"
source = "gh"
to = ["y"]
`, yURL)
	if x {
		extra += fmt.Sprintf(`
[[destination]]
name = "x"
url = %q
timeout = "1s"
retry = ["200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms"]

[[route]]
name = "to-x"
source = "gh"
to = ["x"]
`, xURL)
	}
	return writeConfig(t, dir, extra, storeCase{url: dbURL}.config(time.Second))
}

// Two PostgreSQL nodes that disagree after a reload: a destination only
// node A has is sent to by A alone. With A stopped, node B (which a
// reload took x from) leases none of x's waiting deliveries, however
// many passes it makes; a reload that gives x back to B sends them.
func TestCluster_ReloadDisagree(t *testing.T) {
	dbURL := pgtest.URL(t)
	x, y := newOKSink(t), newClusterSink(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	a := start(t, nodeConfig(t, dirA, dbURL, x.url, y.url, true))
	configB := nodeConfig(t, dirB, dbURL, x.url, y.url, true)
	b := start(t, configB)
	nodeConfig(t, dirB, dbURL, x.url, y.url, false) // B's file without x
	b.cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, b, "destinations_removed=1", 10*time.Second)

	client := &http.Client{Timeout: 5 * time.Second}
	ids := []string{}
	for i := range 10 {
		id := fmt.Sprint("on-a-", i)
		if code, st, err := crashSend(client, a.addr, id); err != nil || code != 200 || st != "accepted" {
			t.Fatalf("%s to node A: %d %q %v", id, code, st, err)
		}
		ids = append(ids, id)
	}
	// Every delivery to x failed once (503), and waits for its retry.
	apptest.Eventually(t, 20*time.Second, "a first attempt of each delivery to x", func() bool { return x.attempts.Load() >= 10 })
	a.stop(t)
	stopped := time.Now()
	before := x.attempts.Load()

	// B makes pass after pass (each event to y wakes it) past the retries'
	// due time: none of x's deliveries goes out.
	for i := 0; i < 20 || time.Since(stopped) < 2*time.Second; i++ {
		id := fmt.Sprint("on-b-", i)
		if code, st, err := crashSend(client, b.addr, id); err != nil || code != 200 || st != "accepted" {
			t.Fatalf("%s to node B: %d %q %v", id, code, st, err)
		}
		apptest.Eventually(t, 10*time.Second, id+" at y", func() bool { m, _ := y.missing(map[string]bool{id: true}); return len(m) == 0 })
	}
	if n := x.attempts.Load(); n != before {
		t.Fatalf("x had %d attempts from node B, which has no destination x; want none", n-before)
	}
	_, raw := apiDo(t, b.addr, "GET", "/events/1", nil)
	var ev struct {
		Deliveries []struct {
			Destination string `json:"destination"`
			State       string `json:"state"`
			Note        string `json:"note"`
		} `json:"deliveries"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil || len(ev.Deliveries) != 2 {
		t.Fatalf("event 1 on node B: %s (%v); want its deliveries to x and y", raw, err)
	}
	for _, d := range ev.Deliveries {
		if want := map[string]string{"x": "destination no longer configured"}[d.Destination]; d.Note != want || d.Destination == "x" && d.State != "pending" {
			t.Errorf("node B's delivery to %s: %s, note %q; want pending with note %q", d.Destination, d.State, d.Note, want)
		}
	}

	// x is back in B's file: B sends what waited, each once.
	x.ok.Store(true)
	nodeConfig(t, dirB, dbURL, x.url, y.url, true)
	b.cmd.Process.Signal(syscall.SIGHUP)
	apptest.Eventually(t, 30*time.Second, "x's waiting deliveries sent by node B", func() bool {
		for _, id := range ids {
			if x.count(id) == 0 {
				return false
			}
		}
		return true
	})
	for _, id := range ids {
		if n := x.count(id); n != 1 {
			t.Errorf("%s reached x %d times; want once", id, n)
		}
	}
	b.stop(t)
}
