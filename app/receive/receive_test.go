package receive_test

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/metrics"
	"hookbox/app/receive"
	"hookbox/app/sweep"
	"hookbox/storage/bboltstore"
)

var now0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

const testConfig = `
[server]
public_url = "https://hooks.example.com"
[retention]
event_ids = "24h"
[[source]]
name = "shop"
provider = "shopify"
secrets = ["old-secret", "new-secret"]
[[source]]
name = "stripe"
provider = "stripe"
secret = "whsec_test"
[[source]]
name = "woo"
provider = "woocommerce"
secret = "woo-secret"
[[source]]
name = "erp"
provider = "hmac"
secret = "erp-secret"
signature_header = "X-Signature"
signature_prefix = "sha256="
id = "{header.X-Shop}:{body.event.id}"
topic = "{body.event.kind}"
[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"
id = "{body.id}"
`

// newReceiver returns a receiver over an in-memory store (apptest.Store,
// checked against bbolt's answers there) with its clock at *now: the
// receive path and the sweep need no disk.
func newReceiver(t *testing.T, now *time.Time) (*receive.Receiver, *apptest.Store) {
	t.Helper()
	db := apptest.NewStore()
	return newReceiverOver(t, now, db), db
}

// newReceiverOnDisk returns a receiver over a real bbolt file with its
// clock at *now, for a test that needs what only a store keeps (counts).
func newReceiverOnDisk(t *testing.T, now *time.Time) (*receive.Receiver, *bboltstore.DB) {
	t.Helper()
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newReceiverOver(t, now, db), db
}

// newReceiverOver returns a receiver of testConfig over store.
func newReceiverOver(t *testing.T, now *time.Time, store app.IngestStore) *receive.Receiver {
	t.Helper()
	cfg, err := config.Parse("test.toml", testConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := receive.New(cfg, store)
	r.Now = func() time.Time { return *now }
	return r
}

func TestReceiver_Receive(t *testing.T) {
	ctx := context.Background()
	now := now0
	r, db := newReceiver(t, &now)
	body := []byte(`{"id": 1, "title": "a/b & <c>"}`)

	t.Run("Accepted", func(t *testing.T) {
		res, err := r.Receive(ctx, "shop", apptest.Signed(t, "shopify", "new-secret", body, "", "wh-1", "orders/create", now))
		if err != nil || res.Outcome != app.Accepted || res.ID != "wh-1" {
			t.Fatalf("Receive = %+v, %v", res, err)
		}
		_, seq, ok, _ := db.LookupID(context.Background(), "shop", "wh-1")
		e, err := db.Event(context.Background(), seq)
		if !ok || err != nil || string(e.Body) != string(body) || e.Topic != "orders/create" {
			t.Fatalf("stored %+v, %v", e, err)
		}
	})
	t.Run("Duplicate", func(t *testing.T) {
		res, err := r.Receive(ctx, "shop", apptest.Signed(t, "shopify", "new-secret", body, "", "wh-1", "orders/create", now))
		if err != nil || res.Outcome != app.Duplicate {
			t.Fatalf("Receive = %+v, %v", res, err)
		}
	})
	t.Run("OldSecretDuringRotation", func(t *testing.T) {
		res, err := r.Receive(ctx, "shop", apptest.Signed(t, "shopify", "old-secret", body, "", "wh-2", "orders/create", now))
		if err != nil || res.Outcome != app.Accepted {
			t.Fatalf("Receive = %+v, %v", res, err)
		}
	})
	t.Run("ErrUnauthorized", func(t *testing.T) {
		_, err := r.Receive(ctx, "shop", apptest.Signed(t, "shopify", "wrong", body, "", "wh-3", "x", now))
		if app.ErrorCode(err) != app.EUNAUTHORIZED {
			t.Fatalf("err = %v, want unauthorized", err)
		}
		if got := r.SourceStats("shop").Rejected.Load(); got != 1 {
			t.Fatalf("rejected counter = %d, want 1", got)
		}
		if _, _, ok, _ := db.LookupID(context.Background(), "shop", "wh-3"); ok {
			t.Fatal("a rejected request was stored")
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		if _, err := r.Receive(ctx, "nope", &app.Inbound{}); app.ErrorCode(err) != app.ENOTFOUND {
			t.Fatalf("err = %v, want not found", err)
		}
	})
	t.Run("ErrInvalidNoID", func(t *testing.T) {
		_, err := r.Receive(ctx, "shop", apptest.Signed(t, "shopify", "new-secret", body, "", "", "orders/create", now))
		if app.ErrorCode(err) != app.EINVALID {
			t.Fatalf("err = %v, want invalid", err)
		}
	})
	t.Run("StripeStaleTimestamp", func(t *testing.T) {
		sb := []byte(`{"id": "evt_1", "type": "charge.succeeded"}`)
		_, err := r.Receive(ctx, "stripe", apptest.Signed(t, "stripe", "whsec_test", sb, "", "", "", now.Add(-6*time.Minute)))
		if app.ErrorCode(err) != app.EUNAUTHORIZED {
			t.Fatalf("err = %v, want unauthorized", err)
		}
		res, err := r.Receive(ctx, "stripe", apptest.Signed(t, "stripe", "whsec_test", sb, "", "", "", now.Add(-time.Minute)))
		if err != nil || res.ID != "evt_1" {
			t.Fatalf("Receive = %+v, %v", res, err)
		}
	})
	t.Run("WooCommercePing", func(t *testing.T) {
		h := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
		res, err := r.Receive(ctx, "woo", apptest.Inbound([]byte("webhook_id=17"), h))
		if err != nil || res.Outcome != app.Ping {
			t.Fatalf("Receive = %+v, %v", res, err)
		}
		if _, events, _ := db.Counts(context.Background()); events != 3 {
			t.Fatalf("events = %d, want 3 (the ping is not stored)", events)
		}
	})
	t.Run("OverriddenIDAndTopic", func(t *testing.T) {
		eb := []byte(`{"event": {"id": 42, "kind": "stock.changed"}}`)
		in := apptest.Signed(t, "hmac", "erp-secret", eb, "", "", "", now)
		in.Header = append(in.Header, app.HeaderField{Name: "X-Shop", Value: "north"})
		res, err := r.Receive(ctx, "erp", in)
		if err != nil || res.ID != "north:42" {
			t.Fatalf("Receive = %+v, %v", res, err)
		}
		_, seq, _, _ := db.LookupID(context.Background(), "erp", "north:42")
		if e, _ := db.Event(context.Background(), seq); e == nil || e.Topic != "stock.changed" {
			t.Fatalf("stored %+v", e)
		}
		// Without the header the id cannot be built: 400, nothing stored.
		_, err = r.Receive(ctx, "erp", apptest.Signed(t, "hmac", "erp-secret", eb, "", "", "", now))
		if app.ErrorCode(err) != app.EINVALID {
			t.Fatalf("err = %v, want invalid", err)
		}
	})
	t.Run("SecretsNotStored", func(t *testing.T) {
		in := apptest.Signed(t, "github", "gh-secret", []byte(`{"id": "g1"}`), "", "del-1", "push", now)
		// Every dropped name, in the cases senders use, and names that only
		// look like one.
		drop := []string{"Authorization", "COOKIE", "proxy-authorization", "Connection", "Keep-Alive",
			"Transfer-Encoding", "TE", "Upgrade", "host", "Content-Length", "Accept-Encoding", "Expect"}
		keep := []string{"X-Authorization", "Cookies", "Proxy-Authorization-Info", "Content-Type", "X-Hookbox-Note"}
		for _, name := range append(append([]string{}, drop...), keep...) {
			in.Header = append(in.Header, app.HeaderField{Name: name, Value: "top-secret"})
		}
		if _, err := r.Receive(ctx, "gh", in); err != nil {
			t.Fatal(err)
		}
		_, seq, _, _ := db.LookupID(context.Background(), "gh", "g1")
		e, _ := db.Event(context.Background(), seq)
		stored := map[string]bool{}
		for _, h := range e.Header {
			stored[h.Name] = true
		}
		for _, name := range drop {
			if stored[name] {
				t.Errorf("stored header %s", name)
			}
		}
		for _, name := range keep {
			if !stored[name] {
				t.Errorf("header %s not stored", name)
			}
		}
	})
	t.Run("ErrUnavailable", func(t *testing.T) {
		r2, db2 := newReceiver(t, &now)
		db2.Close()
		_, err := r2.Receive(ctx, "shop", apptest.Signed(t, "shopify", "new-secret", body, "", "wh-9", "x", now))
		if app.ErrorCode(err) != app.EUNAVAILABLE {
			t.Fatalf("err = %v, want unavailable", err)
		}
	})
}

// 100 concurrent deliveries of one event id: exactly one accepted.
func TestReceiver_Receive_ConcurrentSameID(t *testing.T) {
	now := now0
	r, db := newReceiver(t, &now)
	body := []byte(`{"id": 7}`)
	var accepted, dups atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		in := apptest.Signed(t, "shopify", "new-secret", body, "", "same", "orders/paid", now)
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := r.Receive(context.Background(), "shop", in)
			switch {
			case err != nil:
				t.Error(err)
			case res.Outcome == app.Accepted:
				accepted.Add(1)
			case res.Outcome == app.Duplicate:
				dups.Add(1)
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != 1 || dups.Load() != 99 {
		t.Fatalf("accepted %d, duplicates %d; want 1 and 99", accepted.Load(), dups.Load())
	}
	if _, events, _ := db.Counts(context.Background()); events != 1 {
		t.Fatalf("events = %d, want 1", events)
	}
}

// After the retention passes the sweep forgets an id and it is accepted again.
func TestSweeper_Sweep(t *testing.T) {
	now := now0
	r, db := newReceiver(t, &now)
	cfg, _ := config.Parse("test.toml", testConfig, nil)
	sw := sweep.New(cfg, db)
	sw.Now = func() time.Time { return now }
	sw.Chunk = 7
	ctx := context.Background()
	for i := range 20 {
		in := apptest.Signed(t, "shopify", "new-secret", []byte(`{}`), "", fmt.Sprint("e", i), "x", now)
		if _, err := r.Receive(ctx, "shop", in); err != nil {
			t.Fatal(err)
		}
	}
	now = now0.Add(23 * time.Hour)
	if res, err := sw.Sweep(ctx); err != nil || res.IDs != 0 {
		t.Fatalf("early sweep = %+v, %v; want nothing forgotten", res, err)
	}
	in := apptest.Signed(t, "shopify", "new-secret", []byte(`{}`), "", "e3", "x", now)
	if res, _ := r.Receive(ctx, "shop", in); res.Outcome != app.Duplicate {
		t.Fatalf("before expiry: %v, want duplicate", res.Outcome)
	}
	now = now0.Add(25 * time.Hour)
	res, err := sw.Sweep(ctx)
	if err != nil || res.IDs != 20 || res.Chunks < 3 {
		t.Fatalf("sweep = %+v, %v; want 20 ids in chunks of 7", res, err)
	}
	in = apptest.Signed(t, "shopify", "new-secret", []byte(`{}`), "", "e3", "x", now)
	if res, _ := r.Receive(ctx, "shop", in); res.Outcome != app.Accepted {
		t.Fatalf("after sweep: %v, want accepted", res.Outcome)
	}
}

// Metrics take the configured source name, never the request's string
// (whose buffer the next request reuses): a label keeps its value after
// the caller's bytes change. Unknown sources are counted under one fixed
// label and logged, throttled, with the path and the client.
func TestReceiver_LabelsAndUnknownSources(t *testing.T) {
	ctx := context.Background()
	now := now0
	r, db := newReceiverOnDisk(t, &now)
	cfg, _ := config.Parse("test.toml", testConfig, nil)
	stats := app.NewStats(cfg, db, func() time.Time { return now })
	prom := metrics.New(stats, db)
	r.Stats = stats
	var log strings.Builder
	r.Logger = slog.New(slog.NewTextHandler(&log, nil))

	name := []byte("shop") // the caller's buffer, as fasthttp's would be
	body := []byte(`{"id": 1}`)
	if _, err := r.Receive(ctx, unsafe.String(&name[0], len(name)), apptest.Signed(t, "shopify", "new-secret", body, "", "lbl-1", "orders/create", now)); err != nil {
		t.Fatal(err)
	}
	copy(name, "\xff\xfe\xfd\xfc") // the next request on the connection
	for i := range 100 {
		in := &app.Inbound{Body: body, Client: "203.0.113.7"}
		if _, err := r.Receive(ctx, fmt.Sprintf("nope-%d\xff", i), in); app.ErrorCode(err) != app.ENOTFOUND {
			t.Fatalf("unknown source: %v", err)
		}
	}
	families, err := prom.Registry.Gather()
	if err != nil {
		t.Fatalf("metrics do not gather: %v", err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "hookbox_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			var source, outcome string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "source":
					source = l.GetValue()
				case "outcome":
					outcome = l.GetValue()
				}
			}
			got[source+"/"+outcome] = m.GetCounter().GetValue()
		}
	}
	if want := map[string]float64{"shop/accepted": 1, app.UnknownSource + "/not_found": 100}; !maps.Equal(got, want) {
		t.Fatalf("hookbox_requests_total = %v, want %v", got, want)
	}
	if n := strings.Count(log.String(), "unknown source"); n != 1 {
		t.Fatalf("%d log lines for 100 unknown sources in one instant; want 1:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), `path="/in/nope-0\xff"`) || !strings.Contains(log.String(), "client=203.0.113.7") {
		t.Fatalf("the line lacks the path or the client:\n%s", log.String())
	}
	now = now.Add(time.Minute)
	r.Receive(ctx, "nope-later", &app.Inbound{Client: "203.0.113.7"})
	if !strings.Contains(log.String(), "unknown_since_last_line=99") {
		t.Fatalf("the next line does not count the ones held back:\n%s", log.String())
	}
}
