package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"html"
	"log/slog"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/metrics"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// filterFunc is a route filter written as a Go function, until the CEL
// engine (app/rules) lands.
type filterFunc func(in *app.RuleInput) (bool, error)

func (f filterFunc) Match(in *app.RuleInput) (bool, error) { return f(in) }
func (f filterFunc) String() string                        { return "test filter" }

const filterFixtureConfig = `
[status]
user = "ops"
password = "pw-1234"
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
[[destination]]
name = "erp"
url = "http://127.0.0.1:1/erp"
[[destination]]
name = "slack"
url = "http://127.0.0.1:1/slack"
[[route]]
name = "erp-paid"
source = "shop"
to = ["erp"]
[[route]]
name = "slack"
source = "shop"
to = ["slack"]
`

// openFilterFixture serves filterFixtureConfig over bbolt in a temporary
// directory: erp-paid takes paid events, slack's filter always fails.
func openFilterFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := mustConfig(t, filterFixtureConfig)
	for _, rt := range cfg.Routes {
		switch rt.Name {
		case "erp-paid":
			rt.Filter = filterFunc(func(in *app.RuleInput) (bool, error) { return strings.Contains(string(in.Body), `"paid"`), nil })
		case "slack":
			rt.Filter = filterFunc(func(*app.RuleInput) (bool, error) { return false, errors.New("no such key: amount") })
		}
	}
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	clock := func() time.Time { return now }
	login := testAccess(t, cfg, db)
	stats := app.NewStats(cfg, db, clock)
	prom := metrics.New(stats, db)
	recv := receive.New(cfg, db)
	recv.Stats, recv.Now, recv.Logger = stats, clock, slog.New(slog.DiscardHandler)
	srv := web.New(cfg, web.Deps{Receiver: recv, Store: db, Health: db.Ping, Access: login, Stats: stats, Metrics: prom, Now: clock})
	f := &fixture{t: t, dir: dir, now: now, db: db, stats: stats, srv: srv, base: "http://" + serve(t, srv.App())}
	f.stop = func() { srv.App().Shutdown(); db.Close() }
	t.Cleanup(f.stop)
	return f
}

// An event the filters turn away is answered 200 (a filter's error is
// never the sender's), and its page and its API detail say which filter
// turned it away and why; the route table, /api/v1/stats and /metrics
// count what each route's filter did.
func TestFilters_UnroutedShownAndCounted(t *testing.T) {
	f := openFilterFixture(t)
	if r := f.send("refund-1", "refunds/create", `{"status": "pending"}`); r.StatusCode != 200 {
		t.Fatalf("send: %d; want 200", r.StatusCode)
	}
	if r := f.send("order-1", "orders/paid", `{"status": "paid"}`); r.StatusCode != 200 {
		t.Fatalf("send: %d; want 200", r.StatusCode)
	}
	_, seq, _, _ := f.db.LookupID(context.Background(), "shop", "refund-1")
	why := `route "erp-paid": filter false; route "slack": filter error: no such key: amount`

	status, page := f.get("/events/" + itoa(seq))
	if status != 200 || !strings.Contains(string(page), "No route took this event (unrouted): "+html.EscapeString(why)) {
		t.Errorf("event page: %d, no reason %q in\n%s", status, why, page)
	}
	status, body := f.get("/api/v1/events/" + itoa(seq))
	var ev struct {
		Event struct {
			Reason *string `json:"unrouted_reason"`
		} `json:"event"`
	}
	if err := json.Unmarshal(body, &ev); status != 200 || err != nil || ev.Event.Reason == nil || *ev.Event.Reason != why {
		t.Errorf("event API: %d, %v: %s", status, err, body)
	}
	_, routed, _, _ := f.db.LookupID(context.Background(), "shop", "order-1")
	if _, body := f.get("/api/v1/events/" + itoa(routed)); strings.Contains(string(body), "unrouted_reason") {
		t.Errorf("a routed event's detail has a reason: %s", body)
	}

	_, body = f.get("/api/v1/stats")
	var st struct {
		Routes []map[string]any `json:"routes"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	got := map[string][2]any{}
	for _, r := range st.Routes {
		got[r["name"].(string)] = [2]any{r["filtered"], r["filter_errors"]}
	}
	if got["erp-paid"] != [2]any{1.0, 0.0} || got["slack"] != [2]any{0.0, 2.0} {
		t.Errorf("stats routes (filtered, filter_errors) = %v; want erp-paid 1, 0 and slack 0, 2", got)
	}
	_, page = f.get("/")
	table := between(t, string(page), "<h2>Routes</h2>", "</table>")
	for _, want := range []string{
		`<td data-label="route">erp-paid</td><td class="num" colspan="6" title="not debounced" data-label="debounce">—</td><td class="num" data-label="filtered, 24 h" data-stat="filtered">1</td><td class="num" data-label="filter errors, 24 h" data-stat="filter_errors">0</td>`,
		`<td data-label="route">slack</td><td class="num" colspan="6" title="not debounced" data-label="debounce">—</td><td class="num" data-label="filtered, 24 h" data-stat="filtered">0</td><td class="num bad" data-label="filter errors, 24 h" data-stat="filter_errors">2</td>`,
	} {
		if !strings.Contains(table, want) {
			t.Errorf("route table lacks %s:\n%s", want, table)
		}
	}
	_, m := f.get("/metrics")
	for _, want := range []string{`hookbox_route_filter_errors_total{route="slack"} 2`, `hookbox_route_filtered_total{route="erp-paid"} 1`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
