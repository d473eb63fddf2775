package dispatch_test

// The headers a destination gets: hookbox's own once, the providers'
// signatures only when forwarded, and the answer kept as text.

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"hookbox/app"
	"hookbox/app/apptest"
)

// receiveWith receives a GitHub-signed event id for source gh with extra
// headers besides the signature's, each name with the values given.
func (h *harness) receiveWith(t *testing.T, id, body string, extra [][2]string) {
	t.Helper()
	in := apptest.Signed(t, "github", "gh-secret", []byte(body), "", id, "push", h.recv.Now())
	for _, f := range extra {
		in.Header = append(in.Header, app.HeaderField{Name: f[0], Value: f[1]})
	}
	if res, err := h.recv.Receive(context.Background(), "gh", in); err != nil || res.Outcome != app.Accepted {
		t.Fatalf("Receive(%s) = %+v, %v", id, res, err)
	}
}

// Every header hookbox sets goes out once, hookbox's, whatever copies a
// sender sent under that name in any case: X-Hookbox-*, the Standard
// Webhooks headers under either name, Idempotency-Key, User-Agent, and the
// destination's configured headers; and the same names written with
// underscores for dashes, which Rack, WSGI and CGI servers read as the
// dashed ones. With signature_headers = "svix" the
// signature is also under svix-* names, and verifies under both.
func TestSend_OwnHeadersOnce(t *testing.T) {
	for _, names := range []string{"standard", "svix"} {
		t.Run(names, func(t *testing.T) {
			s := newSink(t, 200)
			toml := strings.Replace(destsConfig(`[]`, s.URL), "retry = []", fmt.Sprintf("retry = []\nsignature_headers = %q", names), 1)
			h := newHarness(t, toml)
			var extra [][2]string
			for _, name := range []string{"X-Hookbox-Source", "x-hookbox-source", "X-Hookbox-Topic", "X-Hookbox-Event-Id",
				"X-Hookbox-Attempt", "webhook-id", "Webhook-Id", "webhook-timestamp", "webhook-signature", "svix-id", "Svix-Id",
				"svix-timestamp", "svix-signature", "Idempotency-Key", "idempotency-key", "User-Agent", "user-agent", "X-Api-Key", "x-api-key",
				// One variable to Rack, WSGI and CGI servers with the dashed names.
				"X_Hookbox_Source", "x_hookbox_event_id", "webhook_signature", "Svix_Id", "Idempotency_Key", "user_agent", "X_Api_Key"} {
				extra = append(extra, [2]string{name, "from-the-sender"}, [2]string{name, "v1,from-the-sender"})
			}
			extra = append(extra, [2]string{"X-Custom", "a"}, [2]string{"X-Custom", "b"})
			h.receiveWith(t, "own-1", `{"a":1}`, extra)
			h.waitState(t, "own-1", 0, app.Delivered)
			r := s.got[0]
			msgID := app.MessageID("gh", "own-1", "d0")
			want := map[string]string{
				"X-Hookbox-Source": "gh", "X-Hookbox-Topic": "push", "X-Hookbox-Event-Id": "own-1", "X-Hookbox-Attempt": "1",
				"Webhook-Id": msgID, "Idempotency-Key": msgID, "User-Agent": "hookbox/dev", "X-Api-Key": "k-0",
			}
			for _, n := range []string{"Webhook-Timestamp", "Webhook-Signature"} {
				want[n] = r.Header.Get(n)
			}
			if names == "svix" {
				want["Svix-Id"], want["Svix-Timestamp"], want["Svix-Signature"] = msgID, want["Webhook-Timestamp"], want["Webhook-Signature"]
			}
			for name, v := range want {
				if got := r.Header.Values(name); len(got) != 1 || got[0] != v || strings.Contains(got[0], "from-the-sender") {
					t.Errorf("%s: %q; want only hookbox's %q", name, got, v)
				}
			}
			for name, vs := range r.Header {
				if strings.Contains(name, "_") {
					t.Errorf("%s: %q went out; want no underscored copy of a name hookbox sets", name, vs)
				}
				if strings.HasPrefix(strings.ToLower(name), "svix-") && names != "svix" {
					t.Errorf("%s: %q went out; want no svix-* header", name, vs)
				}
			}
			if got := r.Header.Values("X-Custom"); len(got) != 2 {
				t.Errorf("X-Custom: %q; want the sender's two copies", got)
			}
			wh, err := standardwebhooks.NewWebhook(destSecret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(s.bodys[0], r.Header); err != nil {
				t.Errorf("webhook-* headers do not verify: %v", err)
			}
			if names == "svix" { // as Svix's library reads them
				sv := http.Header{"Webhook-Id": {r.Header.Get("Svix-Id")}, "Webhook-Timestamp": {r.Header.Get("Svix-Timestamp")},
					"Webhook-Signature": {r.Header.Get("Svix-Signature")}}
				if err := wh.Verify(s.bodys[0], sv); err != nil {
					t.Errorf("svix-* headers do not verify: %v", err)
				}
			}
		})
	}
}

// A destination with forward_signatures = false gets none of the
// providers' signature headers (whichever a sender sent) nor a source's
// configured hmac header, so it cannot post a genuine event back under a
// new id; the rest of the sender's headers and hookbox's own signature go
// out. The default forwards them, for an app that checks the provider's.
func TestSend_ForwardSignatures(t *testing.T) {
	fwd, nofwd := newSink(t, 200), newSink(t, 200)
	toml := fmt.Sprintf(`
[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"
[[source]]
name = "mine"
provider = "hmac"
secret = "mine-secret"
signature_header = "X-Signature"
signature_prefix = "sha256="
id = "{header.X-Id}"
[[destination]]
name = "app"
url = %q
secret = %q
retry = []
[[destination]]
name = "partner"
url = %q
secret = %q
retry = []
forward_signatures = false
[[route]]
source = "gh"
to = ["app", "partner"]
[[route]]
source = "mine"
to = ["app", "partner"]
`, fwd.URL, destSecret, nofwd.URL, destSecret)
	h := newHarness(t, toml)
	sigs := []string{"X-Shopify-Hmac-Sha256", "shopify-hmac-sha256", "Stripe-Signature", "X-WC-Webhook-Signature",
		"X-Hub-Signature", "x-square-hmacsha256-signature", "Paddle-Signature", "X_Hub_Signature_256"}
	var extra [][2]string
	for _, n := range sigs {
		extra = append(extra, [2]string{n, "sig"})
	}
	h.receiveWith(t, "fwd-1", `{"a":1}`, extra)
	body := []byte(`{"b":2}`)
	in := apptest.Signed(t, "hmac", "mine-secret", body, "", "", "", time.Now())
	in.Header = append(in.Header, app.HeaderField{Name: "X-Id", Value: "mine-1"})
	if res, err := h.recv.Receive(context.Background(), "mine", in); err != nil || res.Outcome != app.Accepted {
		t.Fatalf("Receive(mine) = %+v, %v", res, err)
	}
	for _, s := range []*sink{fwd, nofwd} {
		for range 2 {
			select {
			case <-s.hits:
			case <-time.After(20 * time.Second):
				t.Fatal("deliveries did not arrive")
			}
		}
	}
	wh, _ := standardwebhooks.NewWebhook(destSecret)
	all := append(sigs, "X-Hub-Signature-256", "X-Signature")
	for i, r := range nofwd.got {
		for _, n := range all {
			if v := r.Header.Values(n); len(v) != 0 {
				t.Errorf("partner got %s: %q", n, v)
			}
		}
		if err := wh.Verify(nofwd.bodys[i], r.Header); err != nil {
			t.Errorf("partner: hookbox's signature does not verify: %v", err)
		}
		if r.Header.Get("X-Hookbox-Source") == "gh" && (r.Header.Get("X-GitHub-Delivery") != "fwd-1" || r.Header.Get("X-GitHub-Event") != "push") {
			t.Errorf("partner lost the sender's other headers: %v", r.Header)
		}
	}
	for _, r := range fwd.got {
		want := []string{"X-Signature"}
		if r.Header.Get("X-Hookbox-Source") == "gh" {
			want = all[:len(all)-1]
		}
		for _, n := range want {
			if v := r.Header.Values(n); len(v) != 1 {
				t.Errorf("app (forward_signatures default) got %s: %q; want it forwarded", n, v)
			}
		}
	}
	// What each destination could post back to hookbox: the GitHub event's
	// body and headers as it got them, under a new delivery id. From the
	// app's copy that is a genuine new event (finding 5 of issue 24); the
	// partner's holds no signature.
	reinject := func(s *sink, newID string) error {
		s.mu.Lock() // a re-injected event is delivered again, meanwhile
		got, bodys := s.got[:2:2], s.bodys[:2:2]
		s.mu.Unlock()
		for i, r := range got {
			if r.Header.Get("X-Hookbox-Source") != "gh" {
				continue
			}
			in := &app.Inbound{Body: bodys[i]}
			for k, vs := range r.Header {
				for _, v := range vs {
					if k == "X-Github-Delivery" {
						v = newID
					}
					in.Header = append(in.Header, app.HeaderField{Name: k, Value: v})
				}
			}
			res, err := h.recv.Receive(context.Background(), "gh", in)
			if err == nil && res.Outcome == app.Accepted {
				return nil
			}
			return fmt.Errorf("%v %v", res.Outcome, err)
		}
		return errors.New("no GitHub delivery")
	}
	if err := reinject(fwd, "fwd-1-again"); err != nil {
		t.Errorf("the app's copy, posted back under a new id: %v; want it accepted (what forward_signatures = false prevents)", err)
	}
	if err := reinject(nofwd, "fwd-1-once-more"); err == nil {
		t.Errorf("the partner's copy, posted back under a new id, was accepted as a genuine event")
	}
}

// A destination whose headers ask for compression (hookbox sends no
// Accept-Encoding of its own) answers gzip: the attempt records the start
// of the answer as text, not as compressed bytes; bytes that only claim
// to be gzip are kept as received (httpsend's TestInflateSnippet).
func TestSend_GzipAnswerRecordedAsText(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, "ok "+strings.Repeat("long answer ", 1000)) // 12 KB inflated, kept to 1 KiB
		zw.Close()
	}))
	t.Cleanup(srv.Close)
	cfg := faultConfig(faultDest{name: "d", url: srv.URL, timeout: "10s", retry: `["1h"]`})
	cfg = strings.Replace(cfg, "[[route]]", "headers = { \"Accept-Encoding\" = \"gzip\" }\n[[route]]", 1)
	h := newHarness(t, cfg)
	h.send(t, "gz-1", `{}`)
	h.waitState(t, "gz-1", 0, app.Delivered)
	as := h.attempts(t, "gz-1", 0)
	if len(as) != 1 || as[0].Status != 200 || !strings.HasPrefix(string(as[0].Response), "ok long answer") || len(as[0].Response) != app.MaxResponseSnippet {
		t.Fatalf("attempts %+v; want one 200 whose answer starts %q, %d bytes", as, "ok long answer", app.MaxResponseSnippet)
	}
}
