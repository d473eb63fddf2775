package cli_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
)

// ledgerSink is a destination on 127.0.0.1 that answers with a settable
// code and remembers which event ids it answered 2xx.
type ledgerSink struct {
	srv       *http.Server
	url       string
	code      atomic.Int32
	mu        sync.Mutex
	delivered map[string]int
	attempts  atomic.Int64
	// hold, when set, keeps each request unanswered until it is closed
	// (or the client hangs up); the sink answers as usual after.
	hold chan struct{}
}

func newLedgerSink(t *testing.T, code int) *ledgerSink {
	return newLedgerSinkOn(t, "127.0.0.1:0", code, nil)
}

// newLedgerSinkOn is newLedgerSink listening on addr, holding each request
// until hold is closed when hold is not nil.
func newLedgerSinkOn(t *testing.T, addr string, code int, hold chan struct{}) *ledgerSink {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &ledgerSink{hold: hold, url: "http://" + ln.Addr().String() + "/hook", delivered: map[string]int{}}
	s.code.Store(int32(code))
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.attempts.Add(1)
		if s.hold != nil {
			select {
			case <-s.hold:
			case <-r.Context().Done():
				return
			}
		}
		c := int(s.code.Load())
		if c >= 200 && c < 300 {
			s.mu.Lock()
			s.delivered[r.Header.Get("X-GitHub-Delivery")]++
			s.mu.Unlock()
		}
		w.WriteHeader(c)
	})}
	go s.srv.Serve(ln)
	t.Cleanup(func() { s.srv.Close() })
	return s
}

// waitDelivered waits until every one of ids was answered 2xx, failing
// the test after within with how many were not.
func (s *ledgerSink) waitDelivered(t *testing.T, ids []string, within time.Duration) {
	t.Helper()
	apptest.Until(t, within, func() error {
		if m := s.missing(ids); len(m) > 0 {
			return fmt.Errorf("%d of %d acknowledged events not delivered, e.g. %v", len(m), len(ids), m[:min(5, len(m))])
		}
		return nil
	})
}

// waitAttempts waits until the sink was asked n times or more.
func (s *ledgerSink) waitAttempts(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	apptest.Eventually(t, within, fmt.Sprintf("%d requests at the destination", n), func() bool { return s.attempts.Load() >= n })
}

func (s *ledgerSink) missing(ids []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range ids {
		if s.delivered[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

func destinationConfig(url, retry string) string {
	return fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "sink"
url = %q
timeout = "2s"
retry = %s

[[route]]
source = "gh"
to = ["sink"]
`, url, retry)
}

// Kill hookbox with SIGKILL while deliveries are retrying and while events
// are arriving; after a restart every acknowledged event reaches the sink
// (on PostgreSQL, what the killed process had leased goes out when its
// lease ends).
func TestEndToEnd_KillWhileRetrying(t *testing.T) {
	t.Parallel() // mostly waits on retries, and on PostgreSQL for the killed process's leases
	eachStore(t, testKillWhileRetrying)
}

func testKillWhileRetrying(t *testing.T, st storeCase) {
	sink := newLedgerSink(t, 503)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["20ms", "50ms", "100ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms", "200ms"]`), st.config(2*time.Second))
	p := start(t, config)

	var acked []string
	var mu sync.Mutex
	stopLoad := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stopLoad:
					return
				default:
				}
				id := fmt.Sprintf("k-%d-%d", w, i)
				body := []byte(fmt.Sprintf(`{"n": %d}`, i))
				req, _ := http.NewRequest("POST", "http://"+p.addr+"/in/gh", bytes.NewReader(body))
				for k, v := range githubHeaders(body, e2eSecret, id) {
					req.Header.Set(k, v)
				}
				resp, err := client.Do(req)
				if err != nil {
					return // the server is gone
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 && strings.Contains(string(raw), `"accepted"`) {
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				}
			}
		}()
	}
	// Let deliveries fail a few times, then kill mid-load.
	sink.waitAttempts(t, 200, 20*time.Second)
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.cmd.Wait()
	close(stopLoad)
	wg.Wait()
	if len(acked) == 0 {
		t.Fatal("no event was acknowledged before the kill")
	}
	if got := len(sink.missing(acked)); got != len(acked) {
		t.Fatalf("%d events delivered while the sink was failing", len(acked)-got)
	}

	sink.code.Store(200)
	p = start(t, config)
	sink.waitDelivered(t, acked, 60*time.Second)
	t.Logf("acknowledged %d events, all delivered after SIGKILL and restart (%d attempts in all)", len(acked), sink.attempts.Load())
	p.stop(t)
}

// A dead delivery is replayed with `hookbox replay -all` through the
// running server's admin API.
func TestEndToEnd_ReplayCommand(t *testing.T) { eachStore(t, testReplayCommand) }

func testReplayCommand(t *testing.T, st storeCase) {
	sink := newLedgerSink(t, 410)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["10ms"]`), st.config(2*time.Second))
	p := start(t, config)
	body := []byte(`{"n": 1}`)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "r-1")); r.code != 200 {
		t.Fatalf("post: %d %v", r.code, r.body)
	}
	sink.waitAttempts(t, 1, 10*time.Second)
	sink.code.Store(200)

	// Point the command at the running server's port.
	live := filepath.Join(dir, "live.toml")
	data, _ := os.ReadFile(config)
	os.WriteFile(live, bytes.Replace(data, []byte(`"127.0.0.1:0"`), []byte(`"`+p.addr+`"`), 1), 0o600)
	apptest.Until(t, 10*time.Second, func() error { // until the 410 has been recorded as dead
		cmd := exec.Command(clitest.Binary(t), "replay", "-config", live, "-all")
		cmd.Env = append(os.Environ(), "E2E_GH_SECRET="+e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("replay: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "replayed 1 dead delivery") {
			return fmt.Errorf("replay output %q", out)
		}
		return nil
	})
	sink.waitDelivered(t, []string{"r-1"}, 10*time.Second)
	p.stop(t)
}
