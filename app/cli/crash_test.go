package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app/apptest"
	"hookbox/storage/bboltstore"
)

// crashKills sets how many times TestCrash_KillUnderLoad kills hookbox; a
// longer run: go test -run TestCrash -crash.kills 50 (or HOOKBOX_CRASH_KILLS=50).
var crashKills = flag.Int("crash.kills", 0, "SIGKILLs in TestCrash_KillUnderLoad (default 5, or $HOOKBOX_CRASH_KILLS)")

func crashKillCount(t *testing.T) int { return soakCount(t, 5, "HOOKBOX_CRASH_KILLS", *crashKills) }

// soakCount is how many rounds a soak test makes: def, or the number in
// the environment variable env, or flagValue when it is positive.
func soakCount(t *testing.T, def int, env string, flagValue int) int {
	n := def
	if v := os.Getenv(env); v != "" {
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			t.Fatalf("%s=%q is not a positive number", env, v)
		}
		n = k
	}
	if flagValue > 0 {
		n = flagValue
	}
	return n
}

// flakySink is a destination that fails a settable share of the requests
// (503 or 500) and counts, per X-GitHub-Delivery, the ones it took with 2xx.
type flakySink struct {
	url          string
	failPermille atomic.Int32
	attempts     atomic.Int64
	failed       atomic.Int64
	mu           sync.Mutex
	delivered    map[string]int
	badBody      []string // ids whose body did not arrive byte-exact
}

func newFlakySink(t *testing.T, failPermille int32) *flakySink {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &flakySink{url: "http://" + ln.Addr().String() + "/hook", delivered: map[string]int{}}
	s.failPermille.Store(failPermille)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.attempts.Add(1)
		if rand.Int32N(1000) < s.failPermille.Load() {
			s.failed.Add(1)
			w.WriteHeader([]int{500, 503}[rand.IntN(2)])
			return
		}
		id := r.Header.Get("X-GitHub-Delivery")
		s.mu.Lock()
		s.delivered[id]++
		if !bytes.Equal(body, crashBody(id)) {
			s.badBody = append(s.badBody, id)
		}
		s.mu.Unlock()
		w.WriteHeader(200)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// counts returns how many of ids were delivered, which were not, and how
// many deliveries beyond the first there were (at-least-once repeats).
func (s *flakySink) counts(ids map[string]bool) (delivered int, missing []string, repeats int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range ids {
		if n := s.delivered[id]; n > 0 {
			delivered++
			repeats += n - 1
		} else {
			missing = append(missing, id)
		}
	}
	return delivered, missing, repeats
}

// crashBody is the body sent for id, so a re-send is the same request.
func crashBody(id string) []byte { return []byte(`{"id":"` + id + `","note":"a/b & <c>"}`) }

// crashLedger is the load tool's own record of what hookbox answered.
type crashLedger struct {
	mu         sync.Mutex
	acked      map[string]bool // got a 2xx: accepted or duplicate, so it must be durable
	accepted   map[string]int  // how many times the id was answered "accepted"
	ackedList  []string        // acked ids, to sample re-sends from
	unanswered []string        // sent without an answer (killed, or 503): a sender retries them
	sent       int
	resends    int // re-sends of acked ids
	unexpected []string
}

// What a load request is.
const (
	fresh   = iota // a new id: accepted, never a duplicate
	resend         // an acknowledged id again: must be a duplicate
	retried        // an id whose earlier answer was lost: either
)

// waitSent waits until n more requests of the load were answered: a kill
// at a random point of the load, counted in requests rather than time.
func (l *crashLedger) waitSent(t *testing.T, n int) {
	t.Helper()
	l.mu.Lock()
	from := l.sent
	l.mu.Unlock()
	apptest.Eventually(t, 60*time.Second, fmt.Sprintf("%d more load requests answered", n), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.sent >= from+n
	})
}

func (l *crashLedger) record(id string, kind, code int, status string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent++
	if kind == resend {
		l.resends++
	}
	switch {
	case code == 200 && (status == "accepted" || status == "duplicate"):
		if status == "accepted" {
			l.accepted[id]++
		}
		if !l.acked[id] {
			l.acked[id] = true
			l.ackedList = append(l.ackedList, id)
		}
		if kind == resend && status != "duplicate" || kind == fresh && status != "accepted" {
			l.unexpected = append(l.unexpected, fmt.Sprintf("%s (kind %d) answered %q", id, kind, status))
		}
	case code == 503:
		l.unanswered = append(l.unanswered, id)
	default:
		l.unexpected = append(l.unexpected, fmt.Sprintf("%s: %d %q", id, code, status))
	}
}

// next picks what a load worker sends: mostly new ids, a share of re-sends
// of acknowledged ones (they must be duplicates), and retries of ids whose
// answer was lost.
func (l *crashLedger) next(r *rand.Rand, newID string) (id string, kind int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch n := r.IntN(10); {
	case n < 2 && len(l.ackedList) > 0:
		return l.ackedList[r.IntN(len(l.ackedList))], resend
	case n < 3 && len(l.unanswered) > 0:
		id = l.unanswered[len(l.unanswered)-1]
		l.unanswered = l.unanswered[:len(l.unanswered)-1]
		return id, retried
	}
	return newID, fresh
}

func (l *crashLedger) lost(id string) {
	l.mu.Lock()
	l.unanswered = append(l.unanswered, id)
	l.mu.Unlock()
}

// load sends GitHub-signed events to addr from workers, as next picks
// them, until stop is closed or the server stops answering; it records
// every answer.
func (l *crashLedger) load(addr string, workers int, prefix string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers}}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer client.CloseIdleConnections()
			r := rand.New(rand.NewPCG(rand.Uint64(), uint64(w)))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id, kind := l.next(r, fmt.Sprintf("%s-w%d-%d", prefix, w, i))
				code, status, err := crashSend(client, addr, id)
				if err != nil {
					l.lost(id) // killed mid-request: the sender retries later
					return
				}
				l.record(id, kind, code, status)
			}
		}()
	}
	return &wg
}

// resendUnanswered sends again, as a sender would, every id that got no
// answer; the server is up, so each must be answered.
func (l *crashLedger) resendUnanswered(t *testing.T, addr string) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	retries := l.unanswered
	l.unanswered = nil
	for _, id := range retries {
		code, status, err := crashSend(client, addr, id)
		if err != nil {
			t.Fatalf("re-send of %s: %v", id, err)
		}
		l.record(id, retried, code, status)
	}
	if len(l.unanswered) > 0 {
		t.Fatalf("%d re-sends answered 503 with the server up", len(l.unanswered))
	}
}

// checkAnswers fails t on answers the ledger did not expect and on
// deliveries that did not arrive byte-exact.
func (l *crashLedger) checkAnswers(t *testing.T, sink *flakySink) {
	t.Helper()
	if len(l.unexpected) > 0 {
		t.Errorf("%d unexpected answers, e.g. %v", len(l.unexpected), l.unexpected[:min(5, len(l.unexpected))])
	}
	if len(sink.badBody) > 0 {
		t.Errorf("%d deliveries were not byte-exact, e.g. %v", len(sink.badBody), sink.badBody[:min(5, len(sink.badBody))])
	}
}

// send posts one GitHub-signed event and returns the code and "status".
func crashSend(client *http.Client, addr, id string) (int, string, error) {
	body := crashBody(id)
	req, err := http.NewRequest("POST", "http://"+addr+"/in/gh", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	for k, v := range githubHeaders(body, e2eSecret, id) {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, "", err // cut mid-answer: not an acknowledgement
	}
	var a struct{ Status string }
	json.Unmarshal(raw, &a)
	return resp.StatusCode, a.Status, nil
}

// checkFile runs bbolt's consistency check on the data file, read-only.
func checkFile(t *testing.T, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatalf("open %s after the kill: %v", path, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("bbolt check of %s: %v", path, err)
	}
}

// Kill hookbox with SIGKILL at random moments under load, restart it on the
// same data, and check against the load's own ledger: every acknowledged
// id reaches the sink, no id is accepted twice, the file stays consistent.
// On PostgreSQL the same, with the deliveries the killed process had
// leased going out when the lease ends.
func TestCrash_KillUnderLoad(t *testing.T) {
	t.Parallel() // measures nothing; on PostgreSQL it mostly waits for the killed process's leases
	eachStore(t, testKillUnderLoad)
}

func testKillUnderLoad(t *testing.T, st storeCase) {
	kills := crashKillCount(t)
	sink := newFlakySink(t, 600) // 60% of attempts fail while the load runs
	dir := t.TempDir()
	retry := `["50ms"` + strings.Repeat(`, "50ms"`, 59) + `]`
	config := writeConfig(t, dir, fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "sink"
url = %q
timeout = "2s"
concurrency = 16
retry = %s

[[route]]
source = "gh"
to = ["sink"]
`, sink.url, retry), st.config(2*time.Second))
	dataFile := filepath.Join(dir, "data", bboltstore.FileName)
	ledger := &crashLedger{acked: map[string]bool{}, accepted: map[string]int{}}

	for round := range kills {
		p := start(t, config)
		stop := make(chan struct{})
		wg := ledger.load(p.addr, 6, fmt.Sprintf("c%d", round), stop)
		ledger.waitSent(t, 20+rand.IntN(300))
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
		p.cmd.Wait()
		close(stop)
		wg.Wait()
		if st.url == "" {
			checkFile(t, dataFile)
		}
	}

	// The sink recovers; the senders retry what got no answer.
	sink.failPermille.Store(0)
	p := start(t, config)
	ledger.resendUnanswered(t, p.addr)
	apptest.Within(45*time.Second, func() bool { _, missing, _ := sink.counts(ledger.acked); return len(missing) == 0 })
	p.stop(t)

	delivered, missing, repeats := sink.counts(ledger.acked)
	dupAccepted := 0
	for _, n := range ledger.accepted {
		if n > 1 {
			dupAccepted++
		}
	}
	t.Logf("kills %d: sent %d (%d re-sends of acknowledged ids), acknowledged %d, delivered %d, missing %d, duplicated acceptances %d; sink attempts %d (%d failed on purpose), repeated deliveries %d",
		kills, ledger.sent, ledger.resends, len(ledger.acked), delivered, len(missing), dupAccepted,
		sink.attempts.Load(), sink.failed.Load(), repeats)
	if len(ledger.acked) == 0 || ledger.resends == 0 {
		t.Fatal("the load acknowledged nothing or re-sent nothing")
	}
	if len(missing) > 0 {
		t.Errorf("%d acknowledged ids never reached the sink, e.g. %v", len(missing), missing[:min(5, len(missing))])
	}
	if dupAccepted > 0 {
		t.Errorf("%d ids were accepted more than once", dupAccepted)
	}
	ledger.checkAnswers(t, sink)

	// The store after the last (clean) stop: consistent, and every
	// acknowledged id is remembered.
	db := st.open(t, dir)
	if bdb, ok := db.(*bboltstore.DB); ok {
		if err := bdb.Check(); err != nil {
			t.Fatalf("bbolt check: %v", err)
		}
	}
	for id := range ledger.acked {
		if _, _, ok, err := db.LookupID(context.Background(), "gh", id); !ok || err != nil {
			t.Fatalf("acknowledged id %s is not remembered: %v", id, err)
		}
	}
}
