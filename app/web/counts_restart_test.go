package web_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// between returns the part of s from the first start to the next end.
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("no %q in the page", start)
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		t.Fatalf("no %q after %q", end, start)
	}
	return s[i : i+j+len(end)]
}

// shown returns what the overview and /api/v1/stats say about the hourly
// counts: the counts table, the charts, and the API's counts and hours.
func shown(t *testing.T, f *fixture) (table, charts, counts, hourly string) {
	t.Helper()
	status, page := f.get("/")
	if status != 200 {
		t.Fatalf("overview: %d", status)
	}
	table = between(t, string(page), `<table class="counts">`, `</table>`)
	charts = between(t, string(page), `<div class="charts">`, `</div>`)
	status, body := f.get("/api/v1/stats")
	if status != 200 {
		t.Fatalf("stats: %d %s", status, body)
	}
	var st struct {
		Counts map[string]map[string]uint64 `json:"counts"`
		Hourly json.RawMessage              `json:"hourly"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Counts["last_day"]["received"] == 0 || st.Counts["last_day"]["delivered"] == 0 {
		t.Fatalf("nothing counted: %s", body)
	}
	c, _ := json.Marshal(st.Counts)
	return table, charts, string(c), string(st.Hourly)
}

// A restart of the server (listener shut down, store closed, both opened
// again on the same directory) shows the same counts and charts, on the
// page and in the API: they come from the data file, not from memory.
func TestOverview_CountsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
	f := openFixture(t, dir, now, nil)
	f.fill()
	table, charts, counts, hourly := shown(t, f)
	if !strings.Contains(table, `data-kind="received-day">8<`) || !strings.Contains(table, `data-kind="debounced-day">2<`) {
		t.Errorf("counts table before the restart:\n%s", table)
	}
	f.stop()
	g := openFixture(t, dir, now, nil)
	table2, charts2, counts2, hourly2 := shown(t, g)
	for _, c := range []struct{ name, before, after string }{
		{"counts table", table, table2}, {"charts", charts, charts2}, {"API counts", counts, counts2}, {"API hourly", hourly, hourly2},
	} {
		if c.before != c.after {
			t.Errorf("%s changed with the restart:\nbefore: %s\nafter:  %s", c.name, c.before, c.after)
		}
	}
}

// overviewPart returns the overview's own part of the page: counts,
// charts and every table.
func overviewPart(t *testing.T, f *fixture) string {
	t.Helper()
	status, page := f.get("/")
	if status != 200 {
		t.Fatalf("overview: %d", status)
	}
	part := between(t, string(page), `<div id="overview"`, `<p><a href="/">Refresh</a></p>`)
	// "ago" counts from the wall clock, not the fixture's: it ticks.
	return agoRE.ReplaceAllString(part, "… ago")
}

var agoRE = regexp.MustCompile(`[0-9][0-9a-z ]* ago`)

// statsTables returns /api/v1/stats' sources, destinations and routes.
func statsTables(t *testing.T, f *fixture) string {
	t.Helper()
	status, body := f.get("/api/v1/stats")
	if status != 200 {
		t.Fatalf("stats: %d %s", status, body)
	}
	var st struct {
		Sources      json.RawMessage `json:"sources"`
		Destinations json.RawMessage `json:"destinations"`
		Routes       json.RawMessage `json:"routes"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	return string(st.Sources) + "\n" + string(st.Destinations) + "\n" + string(st.Routes)
}

// The whole overview — counts, charts and the tables of sources,
// destinations and debounced routes, with their last event and last
// error — is the same after a restart, on the page and in the API: the
// tables count the last 24 hours from the data file, not since start.
func TestOverview_TablesSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
	f := openFixture(t, dir, now, nil)
	f.fill()
	f.send("cust-nokey", "customers/update", `{"name": "no id"}`) // its key cannot be built
	if fired, _, err := f.db.FirePending(context.Background(), now.Add(2*time.Minute)); err != nil || len(fired) != 1 {
		t.Fatalf("FirePending = %v, %v; want the debounced delivery", fired, err)
	}
	before, api := overviewPart(t, f), statsTables(t, f)
	sources := between(t, before, "<h2>Sources</h2>", "</table>")
	dests := between(t, before, "<h2>Destinations</h2>", "</table>")
	routes := between(t, before, "<h2>Routes</h2>", "</table>")
	for _, w := range []struct{ table, name, want string }{
		// 7 accepted (3 orders, 4 customers), 1 duplicate, 1 forged, 0 invalid.
		{sources, "shop", `data-stat="accepted">7</td><td class="num" data-label="duplicates, 24 h" data-stat="duplicate">1</td><td class="num bad" data-label="rejected, 24 h" data-stat="rejected">1</td><td class="num" data-label="invalid, 24 h" data-stat="invalid">0</td>`},
		{sources, "last 24 h", "last 24 h"},
		{sources, "shop's last event", `shop</a></td><td data-label="last event">… ago</td>`},
		{dests, "pos", `data-stat="delivered">3</td><td class="num" data-label="failed attempts, 24 h" data-stat="failed_attempts">0</td>`},
		{dests, "crm's last error", "connection refused<br><small>(… ago)"},
		{dests, "erp's failed attempts", `data-stat="delivered">0</td><td class="num bad" data-label="failed attempts, 24 h" data-stat="failed_attempts">4</td>`},
		// 4 took the route: 1 opened, 2 merged, 1 unkeyed; 1 sent.
		{routes, "customers", `data-stat="received">4</td><td class="num" data-label="merged, 24 h" data-stat="debounced">2</td><td class="num" data-label="deferred, 24 h" data-stat="deferred">0</td><td class="num" data-label="unkeyed, 24 h" data-stat="unkeyed">1</td><td class="num" data-label="sent, 24 h" data-stat="delivered">1</td><td class="num" data-label="reduction">50.0%</td>`},
	} {
		if !strings.Contains(w.table, w.want) {
			t.Errorf("%s: no %s in\n%s", w.name, w.want, w.table)
		}
	}
	f.stop()
	g := openFixture(t, dir, now, nil)
	after, api2 := overviewPart(t, g), statsTables(t, g)
	if before != after {
		t.Errorf("the overview changed with the restart:\nbefore: %s\nafter:  %s", before, after)
	}
	if api != api2 {
		t.Errorf("/api/v1/stats' tables changed with the restart:\nbefore: %s\nafter:  %s", api, api2)
	}
}
