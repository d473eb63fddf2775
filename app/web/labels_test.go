package web_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// The pages count the right thing and say it as a person would: retrying
// deliveries rather than failed attempts, "1 attempt", one "HTTP 500",
// "1m, 5m" rather than "1m0s 5m0s".
func TestPages_Labels(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	events := f.fill()
	page := func(path string) string {
		status, b := f.get(path)
		if status != 200 {
			t.Fatalf("GET %s: %d", path, status)
		}
		return string(b)
	}
	overview := page("/")
	// 4 deliveries wait for a retry (3 to erp, 1 to crm), of the deliveries
	// not done yet, after 7 failed attempts: 5 retried (erp's first event
	// failed twice) and 2 that went dead; the destinations' rows (3 + 4)
	// add up to the same 7.
	for _, want := range []string{`of which <strong data-stat="retrying">4</strong> are waiting for a retry after a failed attempt</span>`,
		`<th scope="row">failed attempts</th><td class="num" data-kind="failed-hour">7</td>`,
		`<th scope="row">went dead</th><td class="num" data-kind="dead-hour">2</td>`,
		`Dead now: <a href="/dead-letters" data-stat="dead">2</a>`,
		`data-label="failed attempts, 24 h" data-stat="failed_attempts">3</td>`,
		`data-label="failed attempts, 24 h" data-stat="failed_attempts">4</td>`} {
		if !strings.Contains(overview, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	for _, gone := range []string{"success rate", "deliveries waiting for a retry"} {
		if strings.Contains(overview, gone) {
			t.Errorf("overview still says %q", gone)
		}
	}
	// Destinations whose last recorded attempt failed say so, from the
	// store, where the dispatcher (not running here, as after a restart)
	// knows nothing yet; one whose last attempt delivered is ok.
	for _, want := range []string{`crm</span></td><td data-label="state"><span><span class="bad">failing: last attempt failed</span>`,
		`erp-warehouse-integration</span></td><td data-label="state"><span><span class="bad">failing: last attempt failed</span>`,
		`pos</span></td><td data-label="state"><span><span class="ok">delivering</span>`} {
		if !strings.Contains(overview, want) {
			t.Errorf("overview lacks %s", want)
		}
	}
	if strings.Contains(overview, "Counts start again") {
		t.Error("overview still says counts start again at a restart")
	}
	dead := page("/dead-letters")
	if strings.Contains(dead, "HTTP 500 HTTP 500") || !strings.Contains(dead, `"last error">HTTP 500</td>`) {
		t.Errorf("dead letters' last error:\n%s", between(t, dead, "<table", "</table>"))
	}
	ev := page(fmt.Sprintf("/events/%d", events[0]))
	for _, want := range []string{"1 attempt", "2 attempts"} {
		if !strings.Contains(ev, want) {
			t.Errorf("event page lacks %q", want)
		}
	}
	if strings.Contains(ev, "1 attempts") {
		t.Error(`event page says "1 attempts"`)
	}
	cfg := page("/config")
	for _, want := range []string{`"retry">1m, 5m, 30m, 2h, 8h</td>`, `"timeout">15s</td>`, `"debounce">1m</td><td data-label="rate limit">5 per 1m</td>`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config page lacks %s", want)
		}
	}
	if strings.Contains(cfg, "0s") && strings.Contains(cfg, "m0s") {
		t.Error("config page has a duration like 1m0s")
	}
}
