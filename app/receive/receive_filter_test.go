package receive_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/fields"
	"hookbox/app/metrics"
	"hookbox/app/receive"
	"hookbox/storage/bboltstore"
)

// filterFunc is a route filter written as a Go function: the filters the
// tests of the receive path need, until the CEL engine (app/rules) lands.
type filterFunc func(in *app.RuleInput) (bool, error)

func (f filterFunc) Match(in *app.RuleInput) (bool, error) { return f(in) }
func (f filterFunc) String() string                        { return "test filter" }

// contains is a filter that says yes when the body contains s.
func contains(s string) filterFunc {
	return func(in *app.RuleInput) (bool, error) { return bytes.Contains(in.Body, []byte(s)), nil }
}

// failing is a filter that always fails with msg.
func failing(msg string) filterFunc {
	return func(*app.RuleInput) (bool, error) { return false, errors.New(msg) }
}

const filterConfig = `
[[source]]
name = "shop"
provider = "shopify"
secret = "shop-secret"
[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"
[[destination]]
name = "erp"
url = "http://127.0.0.1:9/"
[[destination]]
name = "pos"
url = "http://127.0.0.1:9/"
[[destination]]
name = "slack"
url = "http://127.0.0.1:9/"
[[route]]
name = "paid"
source = "shop"
to = ["erp", "pos"]
[[route]]
name = "orders"
source = "shop"
topics = ["orders/*"]
to = ["pos"]
[[route]]
name = "errs"
source = "shop"
to = ["slack"]
[[route]]
name = "vip"
source = "shop"
topics = ["customers/*"]
to = ["pos"]
key = "{body.id}"
debounce = "1m"
[[route]]
name = "gh"
source = "gh"
to = ["slack"]
`

// filterRules gives filterConfig's routes their rules: paid takes paid
// orders and orders them per customer, errs' filter always fails, vip
// takes VIP customers (debounced, ordered per customer).
func filterRules(t testing.TB, cfg *app.Config) {
	t.Helper()
	tmpl := func(s string) *fields.Template {
		tp, err := fields.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	for _, rt := range cfg.Routes {
		switch rt.Name {
		case "paid":
			rt.Filter, rt.OrderKey = contains(`"paid"`), tmpl("{body.customer.id}")
		case "errs":
			rt.Filter = failing("no such key: amount")
		case "vip":
			rt.Filter, rt.OrderKey = contains(`"vip"`), tmpl("c-{body.id}")
		}
	}
}

// newFilterReceiver returns a receiver of filterConfig with filterRules,
// over a real bbolt file, with its clock at *now, its counts (Stats and
// their Prometheus metrics) and its log in log.
func newFilterReceiver(t *testing.T, now *time.Time, log *strings.Builder) (*receive.Receiver, *bboltstore.DB, *app.Stats, *metrics.Prometheus) {
	t.Helper()
	cfg, err := config.Parse("filter.toml", filterConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	filterRules(t, cfg)
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := receive.New(cfg, db)
	r.Now = func() time.Time { return *now }
	r.Stats = app.NewStats(cfg, db, r.Now)
	prom := metrics.New(r.Stats, db)
	r.Logger = slog.New(slog.NewTextHandler(log, nil))
	return r, db, r.Stats, prom
}

// shopEvent is a signed Shopify event of topic with body.
func shopEvent(t testing.TB, id, topic, body string, at time.Time) *app.Inbound {
	return apptest.Signed(t, "shopify", "shop-secret", []byte(body), "", id, topic, at)
}

func TestReceiver_PlanFilters(t *testing.T) {
	now := now0
	var log strings.Builder
	r, _, _, _ := newFilterReceiver(t, &now, &log)
	errs := app.FilterNote{Route: "errs", Err: "no such key: amount"}
	for _, tc := range []struct {
		name, topic, body string
		direct            []app.Direct
		debounce          []app.DebounceOp
		filtered          []app.FilterNote
	}{
		// paid takes it first: both its destinations, in order per customer.
		{name: "PaidOrder", topic: "orders/create", body: `{"financial_status": "paid", "customer": {"id": 7}}`,
			direct:   []app.Direct{{Dest: "erp", Route: "paid", OrderKey: "7"}, {Dest: "pos", Route: "paid", OrderKey: "7"}},
			filtered: []app.FilterNote{errs}},
		// paid turns it away: pos is orders' (the first route that takes
		// the event and names it), without an order.
		{name: "PendingOrder", topic: "orders/create", body: `{"financial_status": "pending", "customer": {"id": 7}}`,
			direct:   []app.Direct{{Dest: "pos", Route: "orders"}},
			filtered: []app.FilterNote{{Route: "paid"}, errs}},
		// An order key that cannot be built leaves the delivery unordered.
		{name: "PaidNoCustomer", topic: "orders/paid", body: `{"financial_status": "paid"}`,
			direct:   []app.Direct{{Dest: "erp", Route: "paid"}, {Dest: "pos", Route: "paid"}},
			filtered: []app.FilterNote{errs}},
		// A debounced route honours its filter, and orders its pending delivery.
		{name: "VIPCustomer", topic: "customers/update", body: `{"id": 9, "tags": "vip"}`,
			debounce: []app.DebounceOp{{Route: "vip", Key: "9", Delay: time.Minute, To: []string{"pos"}, OrderKey: "c-9"}},
			filtered: []app.FilterNote{{Route: "paid"}, errs}},
		{name: "PlainCustomer", topic: "customers/update", body: `{"id": 9}`,
			filtered: []app.FilterNote{{Route: "paid"}, errs, {Route: "vip"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := receive.PlanOf(r, "shop", "e-"+tc.name, tc.topic, shopEvent(t, "e-"+tc.name, tc.topic, tc.body, now))
			if !slices.Equal(p.Direct, tc.direct) {
				t.Errorf("direct = %+v; want %+v", p.Direct, tc.direct)
			}
			if !slices.Equal(p.Filtered, tc.filtered) {
				t.Errorf("filtered = %+v; want %+v", p.Filtered, tc.filtered)
			}
			var ops []app.DebounceOp
			for _, op := range p.Debounce {
				ops = append(ops, *op)
			}
			if len(ops) != len(tc.debounce) || len(ops) > 0 && fmt.Sprint(ops) != fmt.Sprint(tc.debounce) {
				t.Errorf("debounce = %+v; want %+v", ops, tc.debounce)
			}
		})
	}
	// The order key that could not be built was logged once, naming the route.
	if n := strings.Count(log.String(), "order key cannot be built"); n != 1 || !strings.Contains(log.String(), "route=paid") {
		t.Errorf("%d lines about the order key; want 1 naming route paid:\n%s", n, log.String())
	}
}

// Every filter of an event sees the one RuleInput, made once, with what
// the event's rules need, and what the first filter kept in it; routes
// of other sources or topics never ask their filter.
func TestReceiver_PlanOneRuleInput(t *testing.T) {
	cfg, err := config.Parse("filter.toml", filterConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen []*app.RuleInput
	var parsed []any
	for i, rt := range cfg.Routes {
		rt.Filter = filterFunc(func(in *app.RuleInput) (bool, error) {
			seen, parsed = append(seen, in), append(parsed, in.Parsed)
			if in.Parsed == nil {
				in.Parsed = "parsed once"
			}
			return i != 0, nil
		})
	}
	r := receive.New(cfg, nil)
	in := shopEvent(t, "e1", "orders/create", `{"id": 1}`, now0)
	p := receive.PlanOf(r, "shop", "e1", "orders/create", in)
	if len(seen) != 3 { // paid, orders, errs: not vip (topic), not gh (source)
		t.Fatalf("%d filters asked; want 3", len(seen))
	}
	for i, s := range seen {
		if s != seen[0] {
			t.Fatalf("filter %d got another RuleInput", i)
		}
	}
	if got := seen[0]; got.Source != "shop" || got.Topic != "orders/create" || got.ID != "e1" ||
		string(got.Body) != `{"id": 1}` || len(got.Header) != len(in.Header) {
		t.Fatalf("RuleInput = %+v", got)
	}
	if parsed[0] != nil || parsed[1] != "parsed once" || parsed[2] != "parsed once" {
		t.Fatalf("Parsed seen by each filter = %v; want nil, then what the first kept", parsed)
	}
	if want := []app.Direct{{Dest: "pos", Route: "orders"}, {Dest: "slack", Route: "errs"}}; !slices.Equal(p.Direct, want) {
		t.Fatalf("direct = %+v; want %+v", p.Direct, want)
	}
}

// A route with a filter costs an event nothing when it does not match
// the event's source: the plan allocates as much as without any filter.
func TestReceiver_PlanNoFilterNoCost(t *testing.T) {
	in := apptest.Signed(t, "github", "gh-secret", []byte(`{"id": 1}`), "", "d1", "push", now0)
	allocs := func(withFilters bool) float64 {
		cfg, err := config.Parse("filter.toml", filterConfig, nil)
		if err != nil {
			t.Fatal(err)
		}
		if withFilters {
			filterRules(t, cfg)
		}
		r := receive.New(cfg, nil)
		return testing.AllocsPerRun(100, func() { receive.PlanOf(r, "gh", "d1", "push", in) })
	}
	if without, with := allocs(false), allocs(true); with != without {
		t.Fatalf("plan of an event no filter sees: %v allocations with filters on other routes, %v without", with, without)
	}
}

// End to end over bbolt: an event the filters turn away is accepted (a
// filter's error or panic is never the sender's), stored unrouted with
// the reason, counted per route in the store, on the route table and in
// /metrics; a duplicate counts nothing again; the errors are logged once
// a minute per route.
func TestReceiver_FilterCounted(t *testing.T) {
	ctx := context.Background()
	now := now0
	var log strings.Builder
	r, db, stats, prom := newFilterReceiver(t, &now, &log)
	accept := func(id, topic, body string) *app.Event {
		t.Helper()
		res, err := r.Receive(ctx, "shop", shopEvent(t, id, topic, body, now))
		if err != nil || res.Outcome != app.Accepted {
			t.Fatalf("Receive %s = %+v, %v; want accepted", id, res, err)
		}
		_, seq, _, _ := db.LookupID(ctx, "shop", id)
		e, err := db.Event(ctx, seq)
		if err != nil || e == nil {
			t.Fatalf("Event(%d) = %v, %v", seq, e, err)
		}
		return e
	}
	// Not an order: orders does not match; paid says no; errs fails.
	e := accept("r1", "refunds/create", `{"amount_missing": true}`)
	if want := `route "paid": filter false; route "errs": filter error: no such key: amount`; e.Unrouted != want {
		t.Errorf("unrouted = %q; want %q", e.Unrouted, want)
	}
	if ds, _ := db.EventDeliveries(ctx, e.Seq); len(ds) != 0 {
		t.Errorf("%d deliveries of an event no route took", len(ds))
	}
	if res, err := r.Receive(ctx, "shop", shopEvent(t, "r1", "refunds/create", `{}`, now)); err != nil || res.Outcome != app.Duplicate {
		t.Fatalf("Receive of the same id = %+v, %v; want duplicate", res, err)
	}
	// A routed event keeps no reason; its filters' noes still count.
	if e := accept("o1", "orders/create", `{"financial_status": "paid"}`); e.Unrouted != "" {
		t.Errorf("a routed event's unrouted = %q", e.Unrouted)
	}
	// A filter that panics is a filter error, not a crash.
	for _, rt := range receive.ConfigOf(r).Routes {
		if rt.Name == "errs" {
			rt.Filter = filterFunc(func(*app.RuleInput) (bool, error) { panic("boom") })
		}
	}
	if e := accept("r2", "refunds/create", `{}`); !strings.Contains(e.Unrouted, `route "errs": filter error: filter failed: boom`) {
		t.Errorf("unrouted = %q; want errs' panic", e.Unrouted)
	}

	tables, err := stats.Tables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]app.RouteInfo{}
	for _, rt := range tables.Routes {
		rows[rt.Name] = rt
	}
	if got := rows["paid"]; got.Filtered != 2 || got.FilterErrors != 0 || got.Debounced {
		t.Errorf("paid's row = %+v; want 2 filtered", got)
	}
	if got := rows["errs"]; got.Filtered != 0 || got.FilterErrors != 3 {
		t.Errorf("errs' row = %+v; want 3 filter errors", got)
	}
	if got, ok := rows["vip"]; !ok || !got.Debounced {
		t.Errorf("vip's row = %+v, %v; want a debounced route's row", got, ok)
	}
	if _, ok := rows["orders"]; ok {
		t.Error("a route without a key or a filter has a row")
	}
	if got := promCounts(t, prom, "hookbox_route_filter_errors_total"); got["errs"] != 3 || len(got) != 1 {
		t.Errorf("hookbox_route_filter_errors_total = %v; want errs 3", got)
	}
	if got := promCounts(t, prom, "hookbox_route_filtered_total"); got["paid"] != 2 || len(got) != 1 {
		t.Errorf("hookbox_route_filtered_total = %v; want paid 2", got)
	}
	// Four failures of errs (the duplicate's too) in one instant: one line, and the next names the three held back.
	if n := strings.Count(log.String(), "route filter failed"); n != 1 || !strings.Contains(log.String(), `error="no such key: amount"`) {
		t.Fatalf("%d lines about errs' filter; want 1 with the error:\n%s", n, log.String())
	}
	now = now.Add(time.Minute)
	accept("r3", "refunds/create", `{}`)
	if !strings.Contains(log.String(), "held_since_last_line=3") {
		t.Fatalf("the next line does not count the ones held back:\n%s", log.String())
	}
}

// promCounts returns the values of counter name by its route label.
func promCounts(t *testing.T, prom *metrics.Prometheus, name string) map[string]float64 {
	t.Helper()
	families, err := prom.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "route" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}

func TestUnroutedReason(t *testing.T) {
	if got, want := app.UnroutedReason([]app.FilterNote{{Route: "erp-paid"}, {Route: "slack", Err: "no such key: amount"}}),
		`route "erp-paid": filter false; route "slack": filter error: no such key: amount`; got != want {
		t.Errorf("reason = %q; want %q", got, want)
	}
	// An error may quote the body: control characters and invalid UTF-8
	// do not reach the page or the store.
	if got, want := app.UnroutedReason([]app.FilterNote{{Route: "r", Err: "bad\x00\n\xffvalue"}}),
		"route \"r\": filter error: bad  \uFFFDvalue"; got != want {
		t.Errorf("reason = %q; want %q", got, want)
	}
	// Many routes, long errors: cut on a rune boundary, marked.
	var many []app.FilterNote
	for i := range 100 {
		many = append(many, app.FilterNote{Route: fmt.Sprintf("route-%d", i), Err: strings.Repeat("é", 50)})
	}
	got := app.UnroutedReason(many)
	if len(got) > app.MaxUnroutedLen || len(got) < app.MaxUnroutedLen-4 || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Errorf("reason of 100 routes: %d bytes, valid %v: %q", len(got), utf8.ValidString(got), got)
	}
}
