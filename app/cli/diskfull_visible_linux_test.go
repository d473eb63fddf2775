//go:build linux

package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// getAuth GETs path from the running server with the status login and
// returns the code and the body.
func getAuth(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var logTime = regexp.MustCompile(`^time=(\S+) level=(ERROR|WARN)`)

// problemLinesPerSecond returns the most ERROR and WARN lines of log
// within one second from start on, and how many there were in all.
func problemLinesPerSecond(log string, from, to time.Time) (most, total int) {
	perSecond := map[int64]int{}
	for _, line := range strings.Split(log, "\n") {
		m := logTime.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil || at.Before(from) || at.After(to) {
			continue
		}
		total++
		perSecond[at.Unix()]++
		most = max(most, perSecond[at.Unix()])
	}
	return most, total
}

// The disk under the data dir fills up under load: senders get 503, the
// overview shows a banner (since when, how many refused), /healthz says
// degraded, a metric and an alert say so, the log says it at most once a
// second; once space is freed, every acknowledged event is delivered.
func TestFault_DiskFullVisible(t *testing.T) {
	mnt := mountTmpfs(t, 4<<20)
	sink := newLedgerSink(t, 200)
	alertURL, alertTexts := newAlertSink(t)
	config := writeConfig(t, mnt, destinationConfig(sink.url, `["1s", "2s", "5s", "10s", "30s"]`),
		fmt.Sprintf("[alerts]\nurl = %q\ncheck = \"@every 1s\"\n[backup]\nschedule = \"off\"\n", alertURL))
	p := start(t, config)
	filler := filepath.Join(mnt, "filler")
	fillUpTo(t, filler, 1<<20)

	body := append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), 3000)...), `"}`...)
	var mu sync.Mutex
	var acked []string
	var refused int
	var firstRefused time.Time
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("full-%d-%d", w, i)
				code, _, _ := postRaw(t, p.addr, id, body)
				mu.Lock()
				switch code {
				case 200:
					acked = append(acked, id)
				case 503:
					if refused == 0 {
						firstRefused = time.Now()
					}
					refused++
				}
				mu.Unlock()
			}
		}()
	}
	refusedFor := func(d time.Duration) bool {
		mu.Lock()
		defer mu.Unlock()
		return refused > 0 && time.Since(firstRefused) > d
	}
	// Refusing for 4 s: long enough to count the log lines per second.
	if !apptest.Within(60*time.Second, func() bool { return refusedFor(4 * time.Second) }) {
		close(stop)
		wg.Wait()
		t.Fatalf("the disk never filled up (%d accepted)", len(acked))
	}
	// While commits fail, under load.
	fullUntil := time.Now()
	mu.Lock()
	since, nRefused := firstRefused, refused
	mu.Unlock()
	most, total := problemLinesPerSecond(p.logText(), since, fullUntil)
	t.Logf("disk full: %d webhooks refused; %d ERROR/WARN log lines in %v, at most %d in one second",
		nRefused, total, fullUntil.Sub(since).Round(time.Millisecond), most)
	code, health := getAuth(t, p.addr, "/healthz")
	_, page := getAuth(t, p.addr, "/")
	_, metrics := getAuth(t, p.addr, "/metrics")
	close(stop)
	wg.Wait()
	if code != 503 || !strings.Contains(health, `"degraded"`) {
		t.Errorf("/healthz with the disk full: %d %s", code, health)
	}
	if !regexp.MustCompile(`Storage is failing since <time[^>]*>[^<]*</time>, [^<]+ ago: \d+ webhooks? refused`).MatchString(page) {
		t.Errorf("the overview shows no storage banner:\n%s", page)
	}
	if !regexp.MustCompile(`(?m)^hookbox_storage_failing 1$`).MatchString(metrics) {
		t.Errorf("/metrics does not say storage is failing:\n%s", grepLines(metrics, "hookbox_storage"))
	}
	if most > 1 {
		t.Errorf("%d problem lines logged within one second; want at most one", most)
	}
	apptest.Within(10*time.Second, func() bool { return strings.Contains(alertTexts(), "storage") })
	if !strings.Contains(alertTexts(), "storage") {
		t.Errorf("no alert about storage: %q", alertTexts())
	}

	// Space is freed: healthy again without a request, and every
	// acknowledged event is delivered.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	freed := time.Now()
	apptest.Until(t, 20*time.Second, func() error {
		if code, _ := getAuth(t, p.addr, "/healthz"); code != 200 {
			return fmt.Errorf("/healthz not 200 after space was freed:\n%s", p.logText())
		}
		return nil
	})
	t.Logf("/healthz 200 again %v after space was freed", time.Since(freed).Round(time.Millisecond))
	sink.waitDelivered(t, acked, 60*time.Second)
	t.Logf("all %d acknowledged events delivered %v after space was freed", len(acked), time.Since(freed).Round(time.Millisecond))
	apptest.Within(10*time.Second, func() bool { return strings.Contains(alertTexts(), "works again") })
	if !strings.Contains(alertTexts(), "works again") {
		t.Errorf("no alert that storage works again: %q", alertTexts())
	}
	p.stop(t)
}

// newAlertSink serves alerts.url on 127.0.0.1 and returns its URL and a
// function that returns the texts of the messages it got, a line each.
func newAlertSink(t *testing.T) (url string, texts func() string) {
	var mu sync.Mutex
	var alerts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		alerts = append(alerts, m.Text)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() string { mu.Lock(); defer mu.Unlock(); return strings.Join(alerts, "\n") }
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
