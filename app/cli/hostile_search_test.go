package cli_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The red team's body search of issue 42, against hookbox as it ships: 40
// stored bodies of ~1 MB of 'a' and the 1,024-byte text 'a'×1,023 + 'b'
// (before: one GET /api/v1/events?q= took 26.7 s, and 16 whose clients
// hung up kept both cores busy for 4 min 15 s).
//
// 16 searches arrive at once (API searches, the events page's search,
// replay by query's dry run): each is answered, 200 or 429 with
// Retry-After past max(1, CPUs/2) on the node and 2 per caller, and a 200
// either looked at every event or says how far it looked; then 16 more
// whose clients hang up at once leave the CPU within moments. Genuine
// webhooks go on meanwhile; their latency and the searches' answer times
// are logged, not bounded (a shared machine varies).
func TestHostile_BodySearch(t *testing.T) {
	h := startHostile(t)
	c := clientFrom("127.0.0.1", 4)
	c.Timeout = 120 * time.Second
	body := []byte(`{"note":"` + strings.Repeat("a", 1_000_000) + `"}`)
	for i := range 40 {
		resp, raw, err := exchange(c, "POST", "http://"+h.addr+"/in/gh", body, header(githubHeaders(body, e2eSecret, fmt.Sprintf("big-%d", i))))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("store body %d: %v %v %s", i, err, resp, raw)
		}
	}
	auth := http.Header{"Authorization": {"Basic " + base64.StdEncoding.EncodeToString([]byte("admin:"+h.password))}}
	needle := strings.Repeat("a", 1023) + "b"
	q := url.QueryEscape(needle)

	stop := make(chan struct{})
	genuine := webhooks(t, h.addr, "127.0.0.2", 2, 5*time.Millisecond, stop)

	type answer struct {
		kind   string
		status int
		retry  string
		took   time.Duration
		raw    []byte
		err    error
	}
	search := func(i int, cl *http.Client) answer {
		var a answer
		var resp *http.Response
		var raw []byte
		start := time.Now()
		switch i % 8 {
		case 6:
			a.kind = "page"
			resp, raw, a.err = exchange(cl, "GET", "http://"+h.addr+"/events?q="+q, nil, auth)
		case 7:
			a.kind = "replay dry run"
			hdr := auth.Clone()
			hdr.Set("Content-Type", "application/json")
			resp, raw, a.err = exchange(cl, "POST", "http://"+h.addr+"/api/v1/replay", []byte(`{"q":"`+needle+`","dry_run":true}`), hdr)
		default:
			a.kind = "API"
			resp, raw, a.err = exchange(cl, "GET", "http://"+h.addr+"/api/v1/events?q="+q, nil, auth)
		}
		a.took = time.Since(start)
		if resp != nil {
			a.status, a.retry, a.raw = resp.StatusCode, resp.Header.Get("Retry-After"), raw
		}
		return a
	}
	// All 16 connected first, then sent at once.
	answers := make([]answer, 16)
	clients := make([]*http.Client, 16)
	for i := range clients {
		clients[i] = clientFrom("127.0.0.3", 1)
		clients[i].Timeout = 60 * time.Second
		if resp, _, err := exchange(clients[i], "GET", "http://"+h.addr+"/healthz", nil, nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("connect client %d: %v", i, err)
		}
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = search(i, clients[i])
		}()
	}
	close(start)
	wg.Wait()
	busy, ok := 0, 0
	var slowest time.Duration
	for i, a := range answers {
		slowest = max(slowest, a.took)
		switch {
		case a.err != nil:
			t.Errorf("search %d (%s): %v", i, a.kind, a.err)
		case a.status == 429:
			busy++
			if a.retry == "" {
				t.Errorf("search %d (%s): 429 without Retry-After", i, a.kind)
			}
			if a.kind != "page" && !strings.Contains(string(a.raw), `"status":"error"`) {
				t.Errorf("search %d (%s): 429 %s; want the API's error shape", i, a.kind, a.raw)
			}
		case a.status == 200:
			ok++
			if a.kind == "API" {
				var res struct {
					Items         []json.RawMessage `json:"items"`
					NextBefore    uint64            `json:"next_before"`
					SearchedUntil string            `json:"searched_until"`
					StoppedEarly  bool              `json:"stopped_early"`
				}
				if err := json.Unmarshal(a.raw, &res); err != nil || len(res.Items) != 0 ||
					res.NextBefore != 0 && (res.SearchedUntil == "" || !res.StoppedEarly) {
					t.Errorf("search %d: %v %s; want no match, every event looked at or how far it looked", i, err, a.raw)
				}
			}
		default:
			t.Errorf("search %d (%s): %d %.200s; want 200 or 429", i, a.kind, a.status, a.raw)
		}
	}
	t.Logf("16 searches at once: %d answered, %d refused 429, slowest answer %v", ok, busy, slowest.Round(time.Millisecond))
	if ok == 0 || busy == 0 {
		t.Errorf("16 searches at once: %d answered, %d refused; want some of each (at most max(1, CPUs/2) run at once)", ok, busy)
	}
	for i, a := range answers {
		t.Logf("  search %2d %-14s %d in %v", i, a.kind, a.status, a.took.Round(time.Millisecond))
	}

	// 16 more whose clients hang up 50 ms after sending: hookbox's CPU
	// time over the next 3 s shows whether they went on.
	cpu0 := h.cpu(t)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := clientFrom("127.0.0.4", 1)
			cl.Timeout = 50 * time.Millisecond
			search(i, cl) // hung up on purpose: its error is expected
		}()
	}
	wg.Wait()
	cpu1 := h.cpu(t)
	time.Sleep(3 * time.Second) // the real time this measures
	cpu2 := h.cpu(t)
	t.Logf("16 searches whose clients hung up after 50 ms: hookbox used %v of CPU until they had all gone, %v in the 3 s after",
		(cpu1 - cpu0).Round(time.Millisecond), (cpu2 - cpu1).Round(time.Millisecond))
	if cpu2-cpu1 > 3*time.Second { // both cores busy for half the time: the searches went on
		t.Errorf("hookbox used %v of CPU in the 3 s after the searches' clients left; want them stopped", cpu2-cpu1)
	}
	close(stop)
	lat := genuine.wait()
	t.Logf("genuine webhooks meanwhile: %v", lat)
	if len(lat) < 20 {
		t.Errorf("only %d genuine webhooks accepted meanwhile", len(lat))
	}
	h.survived(t)
}

// cpu is the CPU time (user and system) the process has used.
func (p *proc) cpu(t *testing.T) time.Duration {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("hookbox is gone: %v", err)
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:]) // after the command's name: state is field 3
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}
