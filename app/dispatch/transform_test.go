package dispatch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/dispatch"
	"hookbox/app/httpsend"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/storage/bboltstore"
)

// routed is the bbolt store with each delivery the dispatcher reads
// naming its route, as the stores are about to record it (until then they
// give ""): the first route in config order that takes the event and
// names the destination, unless routeOf says otherwise. Everything else
// is the real store.
type routed struct {
	*bboltstore.DB
	cfg     *app.Config
	routeOf func(w app.Work) string // nil: as the receiver chose it
}

func (r *routed) route(ws []app.Work) []app.Work {
	for _, w := range ws {
		if r.routeOf != nil { // a delivery stored with another route than the receiver's
			w.Delivery.Route = r.routeOf(w)
			continue
		}
		if w.Delivery.Route != "" {
			continue
		}
		for _, d := range r.cfg.DestinationsFor(w.Event.Source, w.Event.Topic) {
			if d.Dest == w.Delivery.Destination {
				w.Delivery.Route = d.Route
			}
		}
	}
	return ws
}

func (r *routed) DueDeliveries(ctx context.Context, dest string, now time.Time, limit int, skip func(uint64) bool) ([]app.Work, time.Time, error) {
	ws, next, err := r.DB.DueDeliveries(ctx, dest, now, limit, skip)
	return r.route(ws), next, err
}

func (r *routed) WaitingDeliveries(ctx context.Context, dest string, afterDue time.Time, afterID uint64, limit int, skip func(uint64) bool) ([]app.Work, error) {
	ws, err := r.DB.WaitingDeliveries(ctx, dest, afterDue, afterID, limit, skip)
	return r.route(ws), err
}

// startRouted is startHarness over the data in dir with routed
// deliveries, and with the routes' transforms set by prep (the config
// file cannot name them until app/rules compiles them).
func startRouted(t *testing.T, toml, dir string, prep func(*app.Config), routeOf func(app.Work) string) *harness {
	t.Helper()
	cfg, err := config.Parse("test.toml", toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	if prep != nil {
		prep(cfg)
	}
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{cfg: cfg, db: db, recv: receive.New(cfg, db),
		disp: dispatch.New(cfg, &routed{DB: db, cfg: cfg, routeOf: routeOf}, httpsend.New(cfg, "dev")), changed: make(chan struct{})}
	h.db.OnOpened(func() { h.disp.Wake(); h.signal() })
	dispatch.OnRecorded(h.disp, h.signal)
	ctx, cancel := context.WithCancel(context.Background())
	sendCtx, cancelSends := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.disp.Run(ctx, sendCtx); close(done) }()
	h.stopRun = sync.OnceFunc(func() { cancel(); <-done })
	h.cancelSends = cancelSends
	h.stop = sync.OnceFunc(func() { h.stopRun(); h.disp.Wait(); cancelSends(); db.Close() })
	t.Cleanup(func() { h.stop() })
	return h
}

// transformConfig has a Shopify source, a destination "slack" that only
// the route "refunds-slack" (refunds) names, and "app", which the route
// "all" names for every event; both have a secret and forward_signatures
// at its default (true). dest adds lines to slack's table.
func transformConfig(slackURL, appURL, dest string) string {
	return fmt.Sprintf(`
[[source]]
name = "shop"
provider = "shopify"
secret = "shop-secret"
[[destination]]
name = "slack"
url = %q
secret = %q
retry = ["1ms", "1ms"]
%s
[[destination]]
name = "app"
url = %q
secret = %q
retry = []
[[route]]
name = "refunds-slack"
source = "shop"
topics = ["refunds/*"]
to = ["slack"]
[[route]]
name = "all"
source = "shop"
to = ["app"]
`, slackURL, destSecret, dest, appURL, destSecret)
}

// withTransform sets the transform of the route named route.
func withTransform(route string, t app.Transform) func(*app.Config) {
	return func(cfg *app.Config) {
		for _, r := range cfg.Routes {
			if r.Name == route {
				r.Transform = t
			}
		}
	}
}

// receiveShopify receives an event signed as Shopify sends it today,
// with its headers in both forms, and extra headers (an extra
// Content-Type instead of the signer's).
func (h *harness) receiveShopify(t *testing.T, id, topic, body string, extra ...app.HeaderField) {
	t.Helper()
	hd, err := provider.SignWith("shopify", provider.Settings{Secrets: [][]byte{[]byte("shop-secret")}}, []byte(body), "", id, topic,
		time.Now(), provider.SignOptions{ShopifyHeaders: provider.ShopifyBoth})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range extra {
		if http.CanonicalHeaderKey(f.Name) == "Content-Type" {
			hd.Del("Content-Type")
		}
	}
	in := apptest.Inbound([]byte(body), hd)
	in.Header = append(in.Header, extra...)
	if res, err := h.recv.Receive(context.Background(), "shop", in); err != nil || res.Outcome != app.Accepted {
		t.Fatalf("Receive(%s) = %+v, %v", id, res, err)
	}
}

// waitDest waits until the delivery of the shop event id to dest is in
// state, and returns it.
func (h *harness) waitDest(t *testing.T, id, dest string, state app.DeliveryState) *app.Delivery {
	t.Helper()
	var got *app.Delivery
	if !h.waitFor(20*time.Second, func() bool {
		_, seq, ok, err := h.db.LookupID(context.Background(), "shop", id)
		if !ok || err != nil {
			t.Fatalf("event %s not stored: %v", id, err)
		}
		ds, err := h.db.EventDeliveries(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			if d.Destination == dest {
				got = d
			}
		}
		return got != nil && got.State == state
	}) {
		t.Fatalf("delivery of %s to %s: %+v, want state %v", id, dest, got, state)
	}
	return got
}

// A refund through a route with a Slack transform reaches Slack as the
// Slack-shaped body, with the transform's Content-Type, signed (Standard
// Webhooks, and under svix-* names when the destination asks) over that
// body, and without Shopify's HMAC in either form although the
// destination forwards signatures: it would be false. The sender's
// headers that described its body do not go either; its others do. The
// same event goes to the route without a transform as received, with
// Shopify's HMAC, and is stored as received.
func TestTransform_SlackBodySignedWithoutProviderSignature(t *testing.T) {
	for _, names := range []string{"standard", "svix"} {
		t.Run(names, func(t *testing.T) {
			slack, appSink := newSink(t, 200), newSink(t, 200)
			h := startRouted(t, transformConfig(slack.URL, appSink.URL, fmt.Sprintf("signature_headers = %q\nheaders = { Content-Type = \"text/plain\" }", names)),
				t.TempDir(), withTransform("refunds-slack", apptest.SlackRefund), nil)
			body := `{"id": 812, "amount": "12.50", "currency": "EUR", "note": "a/b & <c>"}`
			h.receiveShopify(t, "refund-1", "refunds/create", body,
				app.HeaderField{Name: "Content-Type", Value: "application/json; charset=utf-8"},
				app.HeaderField{Name: "Content-Md5", Value: "stale"}, app.HeaderField{Name: "Digest", Value: "sha-256=stale"},
				app.HeaderField{Name: "Content_Type", Value: "text/stale"}, app.HeaderField{Name: "X_Shopify_Hmac_Sha256", Value: "stale"},
				app.HeaderField{Name: "X-Custom", Value: "kept"})
			h.waitDest(t, "refund-1", "slack", app.Delivered)
			h.waitDest(t, "refund-1", "app", app.Delivered)

			slack.mu.Lock()
			r, got := slack.got[0], slack.bodys[0]
			slack.mu.Unlock()
			if want := `{"text":"Refund 812: 12.50 EUR"}`; string(got) != want {
				t.Fatalf("slack got %s; want %s", got, want)
			}
			wh, err := standardwebhooks.NewWebhook(destSecret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(got, r.Header); err != nil {
				t.Errorf("slack: the signature does not verify over the body sent: %v", err)
			}
			if names == "svix" {
				sv := http.Header{"Webhook-Id": {r.Header.Get("Svix-Id")}, "Webhook-Timestamp": {r.Header.Get("Svix-Timestamp")},
					"Webhook-Signature": {r.Header.Get("Svix-Signature")}}
				if err := wh.Verify(got, sv); err != nil {
					t.Errorf("slack: the svix-* signature does not verify over the body sent: %v", err)
				}
			}
			if v := r.Header.Values("Content-Type"); len(v) != 1 || v[0] != "application/json" {
				t.Errorf("slack Content-Type %q; want only the transform's", v)
			}
			for name, vs := range r.Header {
				if n := strings.ToLower(name); strings.Contains(n, "hmac") || strings.HasPrefix(n, "content_") ||
					n == "content-md5" || n == "digest" {
					t.Errorf("slack got %s: %q", name, vs)
				}
			}
			if r.Header.Get("X-Custom") != "kept" || r.Header.Get("X-Shopify-Topic") != "refunds/create" ||
				r.Header.Get("Shopify-Topic") != "refunds/create" || r.Header.Get("X-Hookbox-Event-Id") != "refund-1" {
				t.Errorf("slack lost the sender's other headers or hookbox's: %v", r.Header)
			}

			appSink.mu.Lock()
			ar, abody := appSink.got[0], appSink.bodys[0]
			appSink.mu.Unlock()
			if string(abody) != body || ar.Header.Get("X-Shopify-Hmac-Sha256") == "" || ar.Header.Get("Shopify-Hmac-Sha256") == "" ||
				ar.Header.Get("Content-Type") != "application/json; charset=utf-8" || ar.Header.Get("Content-Md5") != "stale" {
				t.Errorf("app got %s with %v; want the event as received, its signatures forwarded", abody, ar.Header)
			}
			if err := wh.Verify(abody, ar.Header); err != nil {
				t.Errorf("app: %v", err)
			}
			_, seq, _, _ := h.db.LookupID(context.Background(), "shop", "refund-1")
			if e, err := h.db.Event(context.Background(), seq); err != nil || string(e.Body) != body {
				t.Errorf("stored event %+v, %v; want its body as received", e, err)
			}
		})
	}
}

// A transform that fails makes its delivery dead at the first attempt,
// which records the reason, with nothing sent and no retry scheduled
// (the destination has two). Another event of the route that the
// transform takes goes on. Once the transform is fixed and hookbox
// restarted, a replay delivers the dead one with the fixed transform's
// body.
func TestTransform_FailureIsDeadAtOnceReplayAfterFix(t *testing.T) {
	slack, appSink := newSink(t, 200), newSink(t, 200)
	dir := t.TempDir()
	toml := transformConfig(slack.URL, appSink.URL, "")
	h := startRouted(t, toml, dir, withTransform("refunds-slack", apptest.SlackRefund), nil)
	h.receiveShopify(t, "refund-bad", "refunds/create", `{"id": 9, "currency": "EUR"}`)
	d := h.waitDest(t, "refund-bad", "slack", app.Dead)
	_, as, err := h.db.Delivery(context.Background(), d.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(as) != 1 || as[0].Status != 0 || as[0].Error != "transform: no such key: amount" || d.LastError != as[0].Error {
		t.Fatalf("attempts %+v, delivery %+v; want one, dead with \"transform: no such key: amount\"", as, d)
	}
	h.receiveShopify(t, "refund-ok", "refunds/create", `{"id": 10, "amount": "1.00", "currency": "EUR"}`)
	h.waitDest(t, "refund-ok", "slack", app.Delivered)
	if n := slack.requests(); n != 1 {
		t.Fatalf("slack got %d requests; want only the good refund's", n)
	}
	if dead, total, err := h.db.DeadLetters(context.Background(), 0, 10); err != nil || total != 1 || dead[0].ID != d.ID {
		t.Fatalf("dead letters %+v (%d), %v; want the failed transform's delivery", dead, total, err)
	}
	h.stop()

	fixed := apptest.TransformFunc(func(in *app.RuleInput, max int) ([]byte, string, error) {
		var b struct {
			ID     int     `json:"id"`
			Amount *string `json:"amount"`
		}
		if err := json.Unmarshal(in.Body, &b); err != nil {
			return nil, "", err
		}
		amount := "(no amount)"
		if b.Amount != nil {
			amount = *b.Amount
		}
		return fmt.Appendf(nil, "Refund %d: %s", b.ID, amount), "text/plain; charset=utf-8", nil
	})
	slack.setPlan(200)
	h = startRouted(t, toml, dir, withTransform("refunds-slack", fixed), nil)
	if err := h.db.Replay(context.Background(), d.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	h.disp.Wake()
	d = h.waitDest(t, "refund-bad", "slack", app.Delivered)
	slack.mu.Lock()
	defer slack.mu.Unlock()
	if d.Attempts != 2 || len(slack.bodys) != 1 || string(slack.bodys[0]) != "Refund 9: (no amount)" ||
		slack.got[0].Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("after the replay: %d attempts, slack got %q; want the fixed transform's body", d.Attempts, slack.bodys)
	}
}

// A transform that fails sent nothing: its destination is not taken to
// be failing (so it is neither probed nor shown as failing for it), as
// it is once an attempt that reached it fails.
func TestTransform_FailureLeavesDestinationHealthy(t *testing.T) {
	slack, appSink := newSink(t, 500), newSink(t, 200)
	h := startRouted(t, transformConfig(slack.URL, appSink.URL, ""), t.TempDir(), withTransform("refunds-slack", apptest.SlackRefund), nil)
	h.receiveShopify(t, "refund-bad-1", "refunds/create", `{"id": 1}`)
	h.receiveShopify(t, "refund-bad-2", "refunds/create", `{"id": 2}`)
	h.waitDest(t, "refund-bad-1", "slack", app.Dead)
	h.waitDest(t, "refund-bad-2", "slack", app.Dead)
	h.disp.Wait() // both attempts recorded and heard: nothing else is in flight
	if dispatch.DestFailing(h.disp, "slack") || slack.requests() != 0 {
		t.Fatalf("after two failed transforms slack is failing: %v (%d requests); want healthy, nothing sent",
			dispatch.DestFailing(h.disp, "slack"), slack.requests())
	}
	h.receiveShopify(t, "refund-ok", "refunds/create", `{"id": 3, "amount": "1.00", "currency": "EUR"}`)
	h.waitDest(t, "refund-ok", "slack", app.Dead) // answered 500 three times
	h.disp.Wait()
	if !dispatch.DestFailing(h.disp, "slack") {
		t.Fatalf("slack answered 500 and is not failing")
	}
}

// A delivery whose route is not recorded (""), or is no longer in the
// config, goes out with the event's body as received: no transform.
func TestTransform_RouteUnknownSendsEventAsReceived(t *testing.T) {
	for _, route := range []string{"", "renamed-since"} {
		t.Run(fmt.Sprintf("route=%q", route), func(t *testing.T) {
			slack, appSink := newSink(t, 200), newSink(t, 200)
			h := startRouted(t, transformConfig(slack.URL, appSink.URL, ""), t.TempDir(), withTransform("refunds-slack", apptest.SlackRefund),
				func(app.Work) string { return route })
			body := `{"id": 3, "amount": "5.00", "currency": "EUR"}`
			h.receiveShopify(t, "refund-3", "refunds/create", body)
			h.waitDest(t, "refund-3", "slack", app.Delivered)
			slack.mu.Lock()
			defer slack.mu.Unlock()
			if string(slack.bodys[0]) != body || slack.got[0].Header.Get("X-Shopify-Hmac-Sha256") == "" {
				t.Fatalf("slack got %s with %v; want the event as received", slack.bodys[0], slack.got[0].Header)
			}
		})
	}
}

// The send path's added cost of a transform, the engine left out (a
// transform that gives a body made beforehand; app/rules benchmarks
// CEL): making the rule input, the checks of ApplyTransform and the
// header of a transformed body, against the header of the event as
// received, for a 2 KiB Shopify order.
func BenchmarkTransformSendPath(b *testing.B) {
	order := []byte(`{"id":820982911946154500,"email":"jon@example.com","total_price":"403.00","currency":"USD","financial_status":"paid","line_items":[` +
		strings.Repeat(`{"id":866550311766439000,"title":"IPod Nano - 8GB","quantity":1,"price":"199.00","sku":"IPOD2008PINK"},`, 17) +
		`{"id":1}]}`)
	hd, err := provider.SignWith("shopify", provider.Settings{Secrets: [][]byte{[]byte("shop-secret")}}, order, "", "e1", "orders/paid",
		time.Now(), provider.SignOptions{ShopifyHeaders: provider.ShopifyBoth})
	if err != nil {
		b.Fatal(err)
	}
	hd.Set("Content-Type", "application/json")
	in := apptest.Inbound(order, hd)
	e := &app.Event{Source: "shop", ID: "e1", Topic: "orders/paid", Header: in.Header, Body: order}
	cfg, err := config.Parse("b.toml", transformConfig("http://127.0.0.1:1/", "http://127.0.0.1:2/", ""), nil)
	if err != nil {
		b.Fatal(err)
	}
	out, dest := app.NewOutbound(cfg, "dev"), cfg.DestinationByName("slack")
	slackBody := []byte(`{"text":"Order 820982911946154500: 403.00 USD, paid"}`)
	made := apptest.TransformFunc(func(*app.RuleInput, int) ([]byte, string, error) { return slackBody, "application/json", nil })
	now := time.Now()
	b.Logf("order body: %d bytes, %d headers", len(order), len(e.Header))
	// CPU time per op beside ns/op: on a loaded machine the wall time of
	// a few µs is mostly waiting for a CPU.
	cpuPerOp := func(b *testing.B, from time.Duration) {
		b.ReportMetric(float64((apptest.CPUTime()-from).Nanoseconds())/float64(b.N), "cpu-ns/op")
	}
	b.Run("AsReceived", func(b *testing.B) {
		b.ReportAllocs()
		cpu := apptest.CPUTime()
		for b.Loop() {
			if _, err := out.Header(dest, e, nil, 1, now); err != nil {
				b.Fatal(err)
			}
		}
		cpuPerOp(b, cpu)
	})
	transformed := func(t app.Transform) func(b *testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			cpu := apptest.CPUTime()
			for b.Loop() {
				t, err := app.ApplyTransform(t, e.RuleInput(), cfg.Server.MaxBodyBytes)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := out.Header(dest, e, t, 1, now); err != nil {
					b.Fatal(err)
				}
			}
			cpuPerOp(b, cpu)
		}
	}
	// ApplyTransform alone: the rule input, the recover, the checks.
	b.Run("ApplyOnly", func(b *testing.B) {
		b.ReportAllocs()
		cpu := apptest.CPUTime()
		for b.Loop() {
			if _, err := app.ApplyTransform(made, e.RuleInput(), cfg.Server.MaxBodyBytes); err != nil {
				b.Fatal(err)
			}
		}
		cpuPerOp(b, cpu)
	})
	// A Slack message is signed over 60 bytes, not the order's 2 KiB.
	b.Run("TransformedToSlack", transformed(made))
	// The same size as the order: what a transform adds, the signature
	// over its body aside.
	b.Run("TransformedSameSize", transformed(apptest.TransformFunc(func(*app.RuleInput, int) ([]byte, string, error) {
		return order, "application/json", nil
	})))
}
