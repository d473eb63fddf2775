package web_test

import (
	"encoding/json"
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
