package cli_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// relativeRE matches what the overview says relative to now ("2s ago",
// "in 59m", "now"): it ticks between two fetches, restart or not.
var relativeRE = regexp.MustCompile(`\b(\d+[smhd])+ ago\b|\bin (\d+[smhd])+\b|\bnow\b`)

// loadedRE finds when the running config was loaded, which a restart
// changes (it loads the file again).
var loadedRE = regexp.MustCompile(`Config loaded (<time[^>]*>)?[^<]*(</time>)? from `)

// Issue 18: a restart changes nothing on the overview. The real binary
// accepts, rejects and delivers (one destination takes everything, one
// refuses connections), then restarts on the same data: the counts, the
// charts and the tables are the same, on the page and in /api/v1/stats.
// Issue 29: the failing destination's health is stored, so the page says
// "failing since" the same time after the restart, and the restart tries
// it no sooner than its stored next try (its failed attempts stay 5).
func TestRestart_OverviewSame(t *testing.T) { eachStore(t, testRestartOverviewSame) }

func testRestartOverviewSame(t *testing.T, st storeCase) {
	sink := newLedgerSink(t, 200)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["1h"]`), `
[[destination]]
name = "down"
url = "http://127.0.0.1:1/down"
timeout = "2s"
retry = ["1h"]

[[route]]
source = "gh"
to = ["down"]
`, st.config(2*time.Second))
	p := start(t, config)
	var ids []string
	for i := range 5 {
		id := fmt.Sprint("restart-", i)
		body := []byte(fmt.Sprintf(`{"n": %d}`, i))
		if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, id)); r.code != 200 {
			t.Fatalf("post: %d %v", r.code, r.body)
		}
		ids = append(ids, id)
	}
	body := []byte(`{"n": 0}`)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "restart-0")); r.code != 200 || r.body["status"] != "duplicate" {
		t.Fatalf("resend: %d %v", r.code, r.body)
	}
	if r := post(t, p.addr, "gh", body, githubHeaders(body, "not-the-secret", "forged")); r.code != 401 {
		t.Fatalf("forged: %d %v", r.code, r.body)
	}
	// Every event at the sink and tried once at the refusing destination.
	apptest.Until(t, 20*time.Second, func() error {
		stats := statsOf(t, adminGet(t, p.addr, "/api/v1/stats"))
		if len(sink.missing(ids)) == 0 && destCount(stats, "down", "failed_attempts") == 5 && destCount(stats, "sink", "delivered") == 5 &&
			destField(stats, "down", "failing_since") != nil && destField(stats, "down", "next_try") != nil {
			return nil
		}
		return fmt.Errorf("not all delivered and tried: missing %v, stats %v", sink.missing(ids), stats["destinations"])
	})
	hour := time.Now().UTC().Hour()
	pageBefore, apiBefore := adminGet(t, p.addr, "/?partial=1"), adminGet(t, p.addr, "/api/v1/stats")
	p.stop(t)

	p = start(t, config)
	pageAfter, apiAfter := adminGet(t, p.addr, "/?partial=1"), adminGet(t, p.addr, "/api/v1/stats")
	p.stop(t)
	if time.Now().UTC().Hour() != hour {
		t.Skip("the clock hour changed between the two fetches: 'this hour' started again; run once more")
	}

	normal := func(page string) string {
		return loadedRE.ReplaceAllString(relativeRE.ReplaceAllString(page, "…"), "Config loaded … from ")
	}
	if a, b := normal(pageBefore), normal(pageAfter); a != b {
		t.Errorf("the overview changed at the restart:\nbefore:\n%s\nafter:\n%s", a, b)
	}
	for _, want := range []string{`data-kind="accepted-day">5<`, `data-kind="duplicate-day">1<`, `data-kind="rejected-day">1<`, `failing since`} {
		if !strings.Contains(pageAfter, want) {
			t.Errorf("the overview after the restart lacks %s", want)
		}
	}
	before, after := statsOf(t, apiBefore), statsOf(t, apiAfter)
	if destField(after, "down", "next_try") == nil {
		t.Errorf("/api/v1/stats after the restart has no next_try for down: %v", after["destinations"])
	}
	for _, s := range []map[string]any{before, after} {
		for _, d := range s["destinations"].([]any) {
			// A pass after the last attempt may move the next try on
			// (a probe's time), never the attempts or failing_since.
			delete(d.(map[string]any), "next_try")
		}
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("/api/v1/stats changed at the restart:\nbefore %v\nafter  %v", before, after)
	}
}

func statsOf(t *testing.T, raw string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("stats: %v: %s", err, raw)
	}
	return m
}

// destField is field of destination name in stats (nil: absent).
func destField(stats map[string]any, name, field string) any {
	ds, _ := stats["destinations"].([]any)
	for _, d := range ds {
		if m, _ := d.(map[string]any); m["name"] == name {
			return m[field]
		}
	}
	return nil
}

// destCount is the count called field of destination name in stats.
func destCount(stats map[string]any, name, field string) float64 {
	ds, _ := stats["destinations"].([]any)
	for _, d := range ds {
		if m, _ := d.(map[string]any); m["name"] == name {
			n, _ := m[field].(float64)
			return n
		}
	}
	return -1
}
