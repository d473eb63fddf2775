package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// shownJS reads every number the overview shows, as the browser renders
// it: the totals (by data-kind), the line of deliveries not done and dead
// now, each row of the sources, destinations and routes (by data-stat),
// and the charts' captions.
const shownJS = `(() => {
  const num = el => el.textContent.trim().replace(/^more than /, "");
  const out = {kinds: {}, now: {}, rows: {}, charts: []};
  for (const el of document.querySelectorAll("[data-kind]")) out.kinds[el.dataset.kind] = num(el);
  for (const el of document.querySelectorAll("#now [data-stat]")) out.now[el.dataset.stat] = num(el);
  for (const [attr, table] of [["source", "sources"], ["destination", "destinations"], ["route", "routes"]]) {
    for (const tr of document.querySelectorAll("tr[data-" + attr + "]")) {
      const row = {};
      for (const td of tr.querySelectorAll("[data-stat]")) row[td.dataset.stat] = num(td);
      const pct = tr.querySelector('[data-label="reduction"]');
      if (pct) row.reduction = num(pct);
      out.rows[table + "/" + tr.dataset[attr]] = row;
    }
  }
  for (const f of document.querySelectorAll("figure.chart")) {
    const c = {title: f.querySelector("figcaption b").textContent};
    for (const el of f.querySelectorAll("[data-chart]")) c[el.dataset.chart] = num(el);
    out.charts.push(c);
  }
  return out;
})()`

// The overview as a browser shows it says the same numbers as
// /api/v1/stats: every total (failed attempts being retrying + dead, the
// sum of the destinations' rows), the deliveries not done, waiting for a
// retry and dead now, every figure of every source, destination and
// route row, and the charts' totals. One dead delivery is replayed first,
// so that "went dead" (2 in 24 h) and "dead now" (1) differ, as after a
// real replay.
func TestBrowser_OverviewMatchesStats(t *testing.T) {
	exe := needChromium(t)
	f := openFixture(t, t.TempDir(), time.Now().UTC(), nil)
	f.fill()
	dead, _, err := f.db.DeadLetters(context.Background(), 0, 10)
	if err != nil || len(dead) != 2 {
		t.Fatalf("dead letters = %v, %v; want 2", dead, err)
	}
	if err := f.db.Replay(context.Background(), dead[0].ID, f.now); err != nil {
		t.Fatal(err)
	}
	ctx := chromium(t, exe)
	var shown struct {
		Kinds  map[string]string            `json:"kinds"`
		Now    map[string]string            `json:"now"`
		Rows   map[string]map[string]string `json:"rows"`
		Charts []map[string]string          `json:"charts"`
	}
	if err := chromedp.Run(ctx, chromedp.Navigate(f.base+"/"), chromedp.WaitVisible(`input[name="password"]`),
		chromedp.SendKeys(`input[name="user"]`, "ops"), chromedp.SendKeys(`input[name="password"]`, "pw-1234"),
		chromedp.Submit(`form.login`), chromedp.WaitVisible(`#overview`), chromedp.Evaluate(shownJS, &shown)); err != nil {
		t.Fatal(err)
	}
	status, body := f.get("/api/v1/stats")
	if status != 200 {
		t.Fatalf("stats: %d %s", status, body)
	}
	var st struct {
		Counts       map[string]map[string]uint64         `json:"counts"`
		Hourly       []struct{ Counts map[string]uint64 } `json:"hourly"`
		Sources      []map[string]any                     `json:"sources"`
		Destinations []map[string]any                     `json:"destinations"`
		Routes       []map[string]any                     `json:"routes"`
		Dead         int                                  `json:"dead"`
		Pending      int                                  `json:"pending"`
		Retrying     int                                  `json:"retrying"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	compared := 0
	same := func(what, got string, want any) {
		t.Helper()
		compared++
		if w := fmt.Sprint(want); got != w {
			t.Errorf("%s: the overview shows %q, /api/v1/stats says %s", what, got, w)
		}
	}

	// The totals: each kind, this hour and the last 24 h.
	for _, per := range []struct{ suffix, key string }{{"hour", "last_hour"}, {"day", "last_day"}} {
		c := st.Counts[per.key]
		for _, kind := range []string{"received", "accepted", "duplicate", "rejected", "debounced", "delivered", "dead"} {
			same("total "+kind+" ("+per.key+")", shown.Kinds[kind+"-"+per.suffix], c[kind])
		}
		same("total failed attempts ("+per.key+")", shown.Kinds["failed-"+per.suffix], c["retrying"]+c["dead"])
	}
	if len(shown.Kinds) != 16 {
		t.Errorf("the totals show %d numbers, want 16 (8 kinds × 2): %v", len(shown.Kinds), shown.Kinds)
	}
	same("deliveries not done", shown.Now["pending"], st.Pending)
	same("waiting for a retry", shown.Now["retrying"], st.Retrying)
	same("dead now", shown.Now["dead"], st.Dead)
	if st.Dead != 1 || st.Counts["last_day"]["dead"] != 2 {
		t.Errorf("after the replay: dead now %d, went dead %d; want 1 and 2", st.Dead, st.Counts["last_day"]["dead"])
	}

	// Every row, every figure; the destinations' failed attempts add up
	// to the total's.
	rows := func(table string, list []map[string]any, keys ...string) {
		if len(list) == 0 {
			t.Errorf("/api/v1/stats has no %s", table)
		}
		for _, r := range list {
			name := fmt.Sprint(r["name"])
			row, ok := shown.Rows[table+"/"+name]
			if !ok {
				t.Errorf("the overview has no row for %s %s", table, name)
				continue
			}
			for _, k := range keys {
				same(table+" "+name+" "+k, row[k], r[k])
			}
		}
	}
	rows("sources", st.Sources, "accepted", "duplicate", "rejected", "invalid")
	rows("destinations", st.Destinations, "delivered", "failed_attempts", "backlog")
	rows("routes", st.Routes, "received", "debounced", "deferred", "unkeyed", "delivered", "filtered", "filter_errors")
	for _, r := range st.Routes {
		same("route "+fmt.Sprint(r["name"])+" reduction", shown.Rows["routes/"+fmt.Sprint(r["name"])]["reduction"],
			strconv.FormatFloat(100*r["reduction"].(float64), 'f', 1, 64)+"%")
	}
	var failed float64
	for _, d := range st.Destinations {
		failed += d["failed_attempts"].(float64)
	}
	same("the destinations' failed attempts, summed", strconv.FormatFloat(failed, 'f', -1, 64), st.Counts["last_day"]["retrying"]+st.Counts["last_day"]["dead"])

	// The charts' captions: the overall ones from "hourly", each
	// destination's from its row.
	var hourMax [2]uint64
	for _, h := range st.Hourly {
		hourMax[0] = max(hourMax[0], h.Counts["received"])
		hourMax[1] = max(hourMax[1], h.Counts["delivered"]+h.Counts["retrying"]+h.Counts["dead"])
	}
	dests := map[string]map[string]any{}
	for _, d := range st.Destinations {
		dests[fmt.Sprint(d["name"])] = d
	}
	if len(shown.Charts) != 2+len(st.Destinations) {
		t.Fatalf("%d charts, want 2 + one per destination (%d)", len(shown.Charts), len(st.Destinations))
	}
	for _, c := range shown.Charts {
		switch title := c["title"]; title {
		case "Received per hour":
			same(title+" total", c["total"], st.Counts["last_day"]["received"])
			same(title+" hourly max", c["max"], hourMax[0])
		case "Deliveries per hour":
			same(title+" delivered", c["total"], st.Counts["last_day"]["delivered"])
			same(title+" failed attempts", c["bad"], st.Counts["last_day"]["retrying"]+st.Counts["last_day"]["dead"])
			same(title+" hourly max", c["max"], hourMax[1])
		default:
			d, ok := dests[title]
			if !ok {
				t.Errorf("a chart %q of no destination", title)
				continue
			}
			same(title+" chart delivered", c["total"], d["delivered"])
			same(title+" chart failed attempts", c["bad"], d["failed_attempts"])
		}
	}
	t.Logf("%d numbers compared", compared)
}
