package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/metrics"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/upstream"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// fixtureConfig has a delivered, a retrying and a dead destination, and a
// debounced route, so that every page and API answer has something in it.
const fixtureConfig = `
[status]
user = "ops"
password = "pw-1234"
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
[[source]]
name = "stripe-payments-europe"
provider = "stripe"
secret = "whsec_unused"
[source.upstream]
api_key = "rk_test_fixture0key"
endpoint = "we_1"
api_url = "http://127.0.0.1:1"
[[destination]]
name = "pos"
url = "http://127.0.0.1:1/pos"
retry = ["1m", "5m", "30m", "2h", "8h"]
[[destination]]
name = "erp-warehouse-integration"
url = "https://erp.example.com/hooks/incoming/webhooks/from-hookbox?token=not-shown"
timeout = "15s"
[[destination]]
name = "crm"
url = "http://127.0.0.1:1/crm"
[[route]]
source = "shop"
topics = ["orders/*"]
to = ["pos", "erp-warehouse-integration", "crm"]
[[route]]
source = "shop"
topics = ["customers/*"]
to = ["crm"]
key = "{body.id}"
debounce = "1m"
rate_limit = "5/1m"
`

// fixture is a server on a real listener over a bbolt store in dir, fed
// through HTTP with signed webhooks; its clock is fixed at now.
type fixture struct {
	t     *testing.T
	dir   string
	now   time.Time
	db    *bboltstore.DB
	stats *app.Stats
	srv   *web.Server
	recv  *receive.Receiver
	base  string
	stop  func()
	// advance moves the server's clock on (now stays where it started).
	advance func(time.Duration)
	// searches is the server's gate of body searches.
	searches *app.SearchGate
}

// openFixture starts a server over the store in dir at clock now.
func openFixture(t *testing.T, dir string, now time.Time, logger *slog.Logger) *fixture {
	t.Helper()
	return openFixtureWith(t, dir, now, logger, "")
}

// openFixtureWith is openFixture with a [server] section.
func openFixtureWith(t *testing.T, dir string, now time.Time, logger *slog.Logger, server string) *fixture {
	t.Helper()
	return openFixtureDeps(t, dir, now, logger, server, nil)
}

// openFixtureDeps is openFixtureWith with edit changing the server's
// deps before it is built (nil: none).
func openFixtureDeps(t *testing.T, dir string, now time.Time, logger *slog.Logger, server string, edit func(*web.Deps)) *fixture {
	t.Helper()
	cfg := mustConfig(t, server+fixtureConfig)
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var clockMu sync.Mutex
	cur := now
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return cur }
	login := testAccess(t, cfg, db)
	stats := app.NewStats(cfg, db, clock)
	prom := metrics.New(stats, db)
	recv := receive.New(cfg, db)
	recv.Stats, recv.Now = stats, clock
	recv.KeepQuarantine(db)
	qctx, stopQuarantine := context.WithCancel(context.Background())
	quarantined := make(chan struct{})
	go func() { recv.RunQuarantine(qctx); close(quarantined) }()
	if logger != nil {
		recv.Logger = logger
	}
	checker := upstream.New(cfg, db, recv)
	checker.Audit = login.Record
	searches := app.NewSearchGate(4, 0) // the per-caller bound, whatever the machine's CPUs
	deps := web.Deps{Receiver: recv, Quarantine: db, Store: db, Health: db.Ping, Access: login, Stats: stats, Metrics: prom, Now: clock,
		Pauser: app.NewPauser(cfg, db, nil, clock), Searches: searches, Upstream: checker}
	if edit != nil {
		edit(&deps)
	}
	srv := web.New(cfg, deps)
	if logger != nil {
		srv.Logger = logger
	}
	addr := serve(t, srv.App())
	f := &fixture{t: t, dir: dir, now: now, db: db, stats: stats, srv: srv, recv: recv, base: "http://" + addr, searches: searches,
		advance: func(d time.Duration) { clockMu.Lock(); cur = cur.Add(d); clockMu.Unlock() }}
	stopped := false
	f.stop = func() {
		if stopped {
			return
		}
		stopped = true
		srv.App().Shutdown()
		stopQuarantine()
		<-quarantined
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}
	t.Cleanup(f.stop)
	return f
}

// send posts a webhook signed for shop, as Shopify would.
func (f *fixture) send(id, topic, body string) *http.Response {
	f.t.Helper()
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("s3cret-shop")}}, []byte(body), "", id, topic, time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// fill gives the store what the pages show: orders delivered, retrying and
// dead, a duplicate, a forged request, an unknown source, merged customer
// updates, and attempts recorded as the dispatcher records them.
func (f *fixture) fill() (events []uint64) {
	f.t.Helper()
	for i := range 3 {
		id := fmt.Sprintf("order-%d", i)
		if r := f.send(id, "orders/create", fmt.Sprintf(`{"id": %d, "note": "a/b & <c>"}`, i)); r.StatusCode != 200 {
			f.t.Fatalf("send %s: %d", id, r.StatusCode)
		}
		_, seq, _, _ := f.db.LookupID(context.Background(), "shop", id)
		events = append(events, seq)
	}
	f.send("order-0", "orders/create", `{"id": 0, "note": "a/b & <c>"}`) // a duplicate
	req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(`{"forged": true}`))
	req.Header.Set("X-Shopify-Hmac-Sha256", "AAAA")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	if resp, err := http.Post(f.base+"/in/shopp", "application/json", strings.NewReader("{}")); err == nil {
		resp.Body.Close()
	}
	for i := range 3 {
		f.send(fmt.Sprintf("cust-%d", i), "customers/update", `{"id": 42}`)
	}
	attempt := func(dl *app.Delivery, status int, errText string, state app.DeliveryState, due time.Time) {
		a := &app.Attempt{Start: f.now.Add(-time.Second), Duration: 120 * time.Millisecond, Status: status, Error: errText,
			Response: bytes.Repeat([]byte("busy "), 3)}
		if err := f.db.RecordAttempt(context.Background(), dl.ID, a, state, due); err != nil {
			f.t.Fatal(err)
		}
		f.stats.Attempt(dl.Destination, state, a.Duration)
	}
	for i, seq := range events {
		ds, err := f.db.EventDeliveries(context.Background(), seq)
		if err != nil || len(ds) != 3 {
			f.t.Fatalf("deliveries of %d: %v, %v", seq, ds, err)
		}
		for _, dl := range ds {
			switch dl.Destination {
			case "pos":
				attempt(dl, 200, "", app.Delivered, time.Time{})
			case "erp-warehouse-integration":
				attempt(dl, 500, "HTTP 500", app.Pending, f.now.Add(time.Minute))
				if i == 0 {
					attempt(dl, 503, "HTTP 503", app.Pending, f.now.Add(5*time.Minute))
				}
			case "crm":
				if i < 2 {
					attempt(dl, 500, "HTTP 500", app.Dead, time.Time{})
				} else {
					attempt(dl, 0, "dial tcp 127.0.0.1:1: connect: connection refused", app.Pending, f.now.Add(2*time.Hour))
				}
			}
		}
	}
	return events
}

// get fetches path logged in with Basic auth and returns the status and
// body.
func (f *fixture) get(path string) (int, []byte) {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.base+path, nil)
	req.SetBasicAuth("ops", "pw-1234")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// post sends a state change with Basic auth.
func (f *fixture) post(path string) (int, []byte) {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.base+path, nil)
	req.SetBasicAuth("ops", "pw-1234")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}
