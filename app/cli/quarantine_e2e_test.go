package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// quarantineSink counts what it takes by X-GitHub-Delivery, and notes the
// headers a recovered event came with.
type quarantineSink struct {
	url  string
	mu   sync.Mutex
	took map[string]int
	head map[string]http.Header
}

func newQuarantineSink(t *testing.T) *quarantineSink {
	s := &quarantineSink{took: map[string]int{}, head: map[string]http.Header{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		id := r.Header.Get("X-GitHub-Delivery")
		s.mu.Lock()
		s.took[id]++
		s.head[id] = r.Header.Clone()
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/hook"
	return s
}

func (s *quarantineSink) count(id string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.took[id] }

// A secret typed wrong after a rotation: the provider's genuine webhooks
// get 401 and are kept in the source's quarantine (hookbox quarantine
// list shows them); a reload with the right secret takes them in, each
// delivered exactly once (one came twice, the provider's retry), without
// the provider's signature; the forged one stays until cleared.
func TestEndToEnd_QuarantineRecovers(t *testing.T) {
	t.Parallel() // it waits on the quarantine's writer and the reload
	eachStore(t, testQuarantineRecovers)
}

func testQuarantineRecovers(t *testing.T, st storeCase) {
	sink := newQuarantineSink(t)
	const right, typo = "repo-secret-rotated-2026", "repo-secret-rotated-2O26"
	source := func(secret string) string {
		return fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[source]]
name = "repo"
provider = "github"
secret = %q

[[destination]]
name = "sink"
url = %q
timeout = "5s"

[[route]]
source = "repo"
to = ["sink"]
`, secret, sink.url) + st.config(5*time.Second)
	}
	dir := t.TempDir()
	config := writeConfig(t, dir, source(typo))
	p := start(t, config)
	body := func(n int) []byte { return fmt.Appendf(nil, `{"n": %d, "note": "a/b & <c>"}`, n) }
	for n := 1; n <= 3; n++ {
		if r := post(t, p.addr, "repo", body(n), githubHeaders(body(n), right, fmt.Sprint("d-", n))); r.code != 401 {
			t.Fatalf("d-%d with the new secret before the fix: %d; want 401", n, r.code)
		}
	}
	post(t, p.addr, "repo", body(1), githubHeaders(body(1), right, "d-1")) // the provider's retry
	post(t, p.addr, "repo", body(9), githubHeaders(body(9), "forged", "d-9"))
	post(t, p.addr, "repo", body(8), map[string]string{"X-GitHub-Delivery": "d-8"}) // unsigned: not kept
	apptest.Until(t, 15*time.Second, func() error {
		if out := hookboxCLI(t, config, p.addr, "quarantine", "list", "repo"); !strings.Contains(out, "repo: 5 refused requests kept") {
			return fmt.Errorf("hookbox quarantine list said:\n%s", out)
		}
		return nil
	})
	if n := sink.count("d-1"); n != 0 {
		t.Fatalf("a refused request reached the destination %d times", n)
	}

	// The fix: the right secret, and a reload.
	fixed := writeConfig(t, dir, source(right))
	if fixed != config {
		t.Fatal("the config moved")
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, p, "quarantine rechecked: requests taken in", 15*time.Second)
	apptest.Until(t, 15*time.Second, func() error {
		for n := 1; n <= 3; n++ {
			if sink.count(fmt.Sprint("d-", n)) != 1 {
				return fmt.Errorf("d-%d delivered %d times", n, sink.count(fmt.Sprint("d-", n)))
			}
		}
		return nil
	})
	// A new event after them: once it is delivered, nothing of the
	// quarantine is still on its way.
	post(t, p.addr, "repo", body(4), githubHeaders(body(4), right, "d-4"))
	if r := post(t, p.addr, "repo", body(2), githubHeaders(body(2), right, "d-2")); r.body["status"] != "duplicate" {
		t.Errorf("d-2 sent again after its recovery: %v; want duplicate", r.body)
	}
	apptest.Eventually(t, 15*time.Second, "d-4 delivered", func() bool { return sink.count("d-4") == 1 })
	for n := 1; n <= 3; n++ {
		id := fmt.Sprint("d-", n)
		if c := sink.count(id); c != 1 {
			t.Errorf("%s delivered %d times; want exactly once", id, c)
		}
		sink.mu.Lock()
		h := sink.head[id]
		sink.mu.Unlock()
		if got := h.Get("X-Hookbox-Origin"); got != "quarantine" {
			t.Errorf("%s came with X-Hookbox-Origin %q; want quarantine", id, got)
		}
		if h.Get("X-Hub-Signature-256") != "" {
			t.Errorf("%s reached the destination with the provider's signature (verified with another secret than the sender signed for it)", id)
		}
	}
	if n := sink.count("d-9"); n != 0 {
		t.Errorf("the forged request was delivered %d times", n)
	}
	out := hookboxCLI(t, config, p.addr, "quarantine", "list", "repo")
	if !strings.Contains(out, "repo: 1 refused requests kept") || !strings.Contains(out, "signature does not match") {
		t.Errorf("after the fix, hookbox quarantine list said:\n%s", out)
	}
	if out := hookboxCLI(t, config, p.addr, "quarantine", "clear", "repo"); out != "repo: cleared 1\n" {
		t.Errorf("hookbox quarantine clear said %q", out)
	}
	p.stop(t)
	if log := p.logText(); strings.Contains(log, right) || strings.Contains(log, typo) {
		t.Error("the log holds a secret")
	}
	_ = os.Remove(config)
}
