package upstream_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/receive"
	"hookbox/app/upstream"
	"hookbox/storage/bboltstore"
)

var ctx = context.Background()

// rig is a checker over a real bbolt file, taking fetched events in
// through a real receiver, with its alerts and audit entries recorded.
type rig struct {
	t       *testing.T
	store   app.Store
	recv    *receive.Receiver
	checker *upstream.Checker
	now     time.Time

	mu     sync.Mutex
	alerts []app.AlertMessage
	audit  []app.AuditEntry
}

const apiKey = "rk_test_51Secret0key"

func newRig(t *testing.T, sources string) *rig {
	t.Helper()
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newRigOver(t, sources, db)
}

// newRigOver is newRig over store.
func newRigOver(t *testing.T, sources string, db app.Store) *rig {
	t.Helper()
	cfg, err := config.Parse("c.toml", sources+`
[[destination]]
name = "erp"
url = "http://127.0.0.1:1/hooks"
`, func(k string) (string, bool) { return apiKey, k == "API_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, store: db, now: time.Now().UTC().Truncate(time.Second)}
	r.recv = receive.New(cfg, db)
	r.recv.Now = func() time.Time { return r.now }
	r.checker = upstream.New(cfg, db, r.recv)
	r.checker.Now = func() time.Time { return r.now }
	r.checker.Alert = func(_ context.Context, m app.AlertMessage) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.alerts = append(r.alerts, m)
		return nil
	}
	r.checker.Audit = func(_ context.Context, e app.AuditEntry) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.audit = append(r.audit, e)
	}
	return r
}

// check runs the check of source as an operator would and returns it.
func (r *rig) check(source string) app.UpstreamCheck {
	r.t.Helper()
	res, err := r.checker.CheckNow(ctx, source, app.Who{Actor: "admin", Via: "cli", From: "local"})
	if err != nil || len(res) != 1 {
		r.t.Fatalf("CheckNow(%s) = %+v, %v", source, res, err)
	}
	if got, err := r.checker.LastCheck(ctx, source); err != nil || got == nil || got.Finished != res[0].Finished || got.Fetched != res[0].Fetched || got.Error != res[0].Error {
		r.t.Fatalf("LastCheck = %+v, %v; want the check's result kept, %+v", got, err, res[0])
	}
	return res[0]
}

// event returns the event source/id as stored, failing when it is not held.
func (r *rig) event(source, id string) *app.Event {
	r.t.Helper()
	_, seq, ok, err := r.store.LookupID(ctx, source, id)
	if err != nil || !ok {
		r.t.Fatalf("%s/%s not held (%v)", source, id, err)
	}
	e, err := r.store.Event(ctx, seq)
	if err != nil || e == nil {
		r.t.Fatalf("event %d: %v", seq, err)
	}
	ds, err := r.store.EventDeliveries(ctx, seq)
	if err != nil || len(ds) != 1 {
		r.t.Fatalf("%s/%s has %d deliveries (%v); want 1: routed once", source, id, len(ds), err)
	}
	return e
}

func stripeSource(apiURL string, repair bool) string {
	return fmt.Sprintf(`
[[source]]
name = "pay"
provider = "stripe"
secret = "whsec_test"

[source.upstream]
api_key_env = "API_KEY"
endpoint = "we_1"
api_url = %q
repair = %v

[[route]]
to = ["erp"]
source = "pay"
`, apiURL, repair)
}

// A Stripe account holds events hookbox never got, behind an endpoint
// Stripe disabled: a check turns the endpoint on again (repair), alerts
// once, and takes in every event the endpoint subscribes to that hookbox
// does not hold, over the whole window, page after page, leaving the
// young ones to their webhook; a second check takes nothing twice, and a
// webhook that comes late is a duplicate.
func TestChecker_StripeFetchesWhatNeverArrived(t *testing.T) {
	stripe := newFakeStripe(t, apiKey)
	r := newRig(t, stripeSource(stripe.URL, true))
	stripe.status = "disabled"
	stripe.enabled = []string{"charge.succeeded", "charge.refunded"}
	var missed []stripeEv
	for i := range 250 { // three pages of Stripe's 100
		missed = append(missed, stripeEv{ID: fmt.Sprintf("evt_m%03d", i), Type: "charge.succeeded", Created: r.now.Add(-70*time.Hour + time.Duration(i)*15*time.Minute)})
	}
	stripe.events = append(stripe.events, missed...)
	for i := range 3 {
		stripe.events = append(stripe.events, stripeEv{ID: fmt.Sprintf("evt_young%d", i), Type: "charge.refunded", Created: r.now.Add(-time.Minute)})
		stripe.events = append(stripe.events, stripeEv{ID: fmt.Sprintf("evt_cust%d", i), Type: "customer.created", Created: r.now.Add(-time.Hour)})
		stripe.events = append(stripe.events, stripeEv{ID: fmt.Sprintf("evt_gone%d", i), Type: "charge.succeeded", Created: r.now.Add(-80 * time.Hour)})
	}
	// Five of them did arrive as webhooks.
	for _, e := range missed[:5] {
		in := apptest.Signed(t, "stripe", "whsec_test", e.body(), "/in/pay", e.ID, e.Type, r.now)
		if res, err := r.recv.Receive(ctx, "pay", in); err != nil || res.Outcome != app.Accepted {
			t.Fatalf("webhook %s: %+v, %v", e.ID, res, err)
		}
	}

	res := r.check("pay")
	want := app.UpstreamCheck{Subscription: "enabled", Repaired: true, Seen: 253, Held: 5, Fetched: 245, Young: 3}
	if res.Subscription != want.Subscription || res.Repaired != want.Repaired || res.Seen != want.Seen || res.Held != want.Held ||
		res.Fetched != want.Fetched || res.Young != want.Young || res.Error != "" {
		t.Errorf("check = %+v; want %+v", res, want)
	}
	if stripe.status != "enabled" || stripe.updates != 1 {
		t.Errorf("endpoint %s after %d updates; want enabled after 1", stripe.status, stripe.updates)
	}
	for _, e := range missed {
		got := r.event("pay", e.ID)
		if e.ID < "evt_m005" {
			if got.Origin != "" {
				t.Errorf("%s came as a webhook; origin %q", e.ID, got.Origin)
			}
			continue
		}
		if got.Origin != app.OriginFetched || !got.ProviderAt.Equal(e.Created) || string(got.Body) != string(e.body()) || got.Topic != e.Type {
			t.Fatalf("fetched %s = origin %q, at %v, topic %q, body %s; want fetched, %v, %s, the event's JSON", e.ID, got.Origin, got.ProviderAt, got.Topic, got.Body, e.Created, e.Type)
		}
	}
	for _, id := range []string{"evt_young0", "evt_cust0", "evt_gone0"} {
		if _, _, ok, _ := r.store.LookupID(ctx, "pay", id); ok {
			t.Errorf("%s was taken in: too young, not the endpoint's, or out of the window", id)
		}
	}
	if len(r.alerts) != 1 || r.alerts[0].Kind != app.AlertSubscriptionDisabled || r.alerts[0].Source != "pay" ||
		!strings.Contains(r.alerts[0].Text, "we_1") || !strings.Contains(r.alerts[0].Text, "turned it on again") {
		t.Errorf("alerts = %+v; want one subscription_disabled for pay saying it was turned on again", r.alerts)
	}
	if len(r.audit) != 1 || r.audit[0].Actor != app.UpstreamActor || r.audit[0].Action != app.AuditUpstream ||
		!strings.Contains(r.audit[0].Detail, "fetched 245") || !strings.Contains(r.audit[0].Detail, "re-enabled") {
		t.Errorf("audit = %+v; want one upstream entry that says what it did", r.audit)
	}

	again := r.check("pay")
	if again.Fetched != 0 || again.Held != 250 || again.Young != 3 || again.Error != "" {
		t.Errorf("second check = %+v; want nothing taken twice", again)
	}
	late := missed[100]
	in := apptest.Signed(t, "stripe", "whsec_test", late.body(), "/in/pay", late.ID, late.Type, r.now)
	if res, err := r.recv.Receive(ctx, "pay", in); err != nil || res.Outcome != app.Duplicate {
		t.Errorf("the late webhook of a fetched event: %+v, %v; want a duplicate", res, err)
	}
	if ids, events, _ := r.store.Counts(ctx); ids != 250 || events != 250 {
		t.Errorf("store holds %d ids, %d events; want 250 of each", ids, events)
	}
	for _, c := range stripe.calls {
		if strings.Contains(c, apiKey) {
			t.Errorf("the key in a path: %s", c)
		}
	}
}

// A disabled endpoint without repair alerts once per episode: not again
// while it stays disabled (nor after a restart: the mark is kept), and
// again when it is disabled anew after it was on.
func TestChecker_DisabledAlertsOncePerEpisode(t *testing.T) {
	stripe := newFakeStripe(t, apiKey)
	r := newRig(t, stripeSource(stripe.URL, false))
	stripe.status = "disabled"
	steps := []struct {
		status string
		alerts int
	}{{"disabled", 1}, {"disabled", 1}, {"enabled", 1}, {"disabled", 2}}
	for i, s := range steps {
		stripe.status = s.status
		if i == 1 { // a restart: a new checker over the same store
			r.checker = upstream.New(mustConfig(t, stripeSource(stripe.URL, false)), r.store, r.recv)
			r.checker.Now = func() time.Time { return r.now }
			r.checker.Alert = func(_ context.Context, m app.AlertMessage) error { r.alerts = append(r.alerts, m); return nil }
		}
		res := r.check("pay")
		if res.Subscription != s.status || res.Repaired || stripe.updates != 0 {
			t.Fatalf("step %d: %+v (updates %d); want %s, left alone", i, res, stripe.updates, s.status)
		}
		if len(r.alerts) != s.alerts {
			t.Fatalf("step %d (%s): %d alerts; want %d", i, s.status, len(r.alerts), s.alerts)
		}
	}
	if !strings.Contains(r.alerts[0].Text, "repair = true") {
		t.Errorf("alert = %q; want it to say how to turn it on", r.alerts[0].Text)
	}
}

func mustConfig(t *testing.T, sources string) *app.Config {
	t.Helper()
	cfg, err := config.Parse("c.toml", sources+"\n[[destination]]\nname = \"erp\"\nurl = \"http://127.0.0.1:1/hooks\"\n", func(k string) (string, bool) { return apiKey, k == "API_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
