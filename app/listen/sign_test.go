package listen_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/listen"
	"hookbox/app/provider"
)

// signCase is one event of the stream and what its forward must carry.
type signCase struct {
	name     string
	provider string
	sig      *app.StreamSignature
	header   [][2]string // as the stream sends it: no signature
	body     string
	// keep are headers the forward carries as the stream sent them.
	keep map[string]string
	// id and topic are what hookbox's verifier reads from the forward.
	id, topic string
}

func signCases() []signCase {
	stripeBody := `{"id":"evt_1","type":"invoice.paid"}`
	return []signCase{
		{name: "ShopifyLegacy", provider: "shopify", body: `{"id":1}`,
			header: [][2]string{{"Content-Type", "application/json"}, {"X-Shopify-Topic", "orders/create"}, {"X-Shopify-Webhook-Id", "wh-1"},
				{"X-Shopify-Event-Id", "ev-1"}, {"X-Shopify-Shop-Domain", "real.myshopify.com"}, {"X-Shopify-Api-Version", "2026-01"}},
			keep: map[string]string{"X-Shopify-Shop-Domain": "real.myshopify.com", "X-Shopify-Api-Version": "2026-01", "Shopify-Hmac-Sha256": ""},
			id:   "ev-1", topic: "orders/create"},
		{name: "ShopifyNew", provider: "shopify", body: `{"id":2}`,
			header: [][2]string{{"shopify-topic", "orders/paid"}, {"shopify-event-id", "ev-2"}, {"shopify-webhook-id", "wh-2"}, {"shopify-shop-domain", "real.myshopify.com"}},
			keep:   map[string]string{"Shopify-Shop-Domain": "real.myshopify.com", "X-Shopify-Hmac-Sha256": ""},
			id:     "ev-2", topic: "orders/paid"},
		{name: "Stripe", provider: "stripe", body: stripeBody, id: "evt_1", topic: "invoice.paid",
			header: [][2]string{{"Content-Type", "application/json; charset=utf-8"}, {"User-Agent", "Stripe/1.0"}},
			keep:   map[string]string{"Content-Type": "application/json; charset=utf-8", "User-Agent": "Stripe/1.0"}},
		{name: "WooCommerce", provider: "woocommerce", body: `{"id":3}`, topic: "order.created",
			header: [][2]string{{"X-WC-Webhook-Topic", "order.created"}, {"X-WC-Webhook-Source", "https://shop.example/"}},
			keep:   map[string]string{"X-Wc-Webhook-Source": "https://shop.example/"}},
		{name: "BigCommerce", provider: "bigcommerce", body: `{"hash":"h1","scope":"store/order/created"}`, id: "h1", topic: "store/order/created",
			header: [][2]string{{"webhook-id", "bc-1"}, {"webhook-timestamp", "1"}},
			keep:   map[string]string{"Webhook-Id": "bc-1"}},
		{name: "Square", provider: "square", body: `{"event_id":"sq-1","type":"payment.created"}`, id: "sq-1", topic: "payment.created"},
		{name: "Paddle", provider: "paddle", body: `{"event_id":"evt_p","event_type":"transaction.paid"}`, id: "evt_p", topic: "transaction.paid"},
		{name: "GitHub", provider: "github", body: `{"ref":"refs/heads/main"}`, id: "gh-delivery-1", topic: "push",
			header: [][2]string{{"X-GitHub-Event", "push"}, {"X-GitHub-Delivery", "gh-delivery-1"}, {"X-GitHub-Hook-ID", "42"}},
			keep:   map[string]string{"X-Github-Hook-Id": "42", "X-Hub-Signature": ""}},
		{name: "Standard", provider: "standard", body: `{"type":"user.created"}`, id: "msg_s1", topic: "user.created",
			header: [][2]string{{"webhook-id", "msg_s1"}, {"webhook-timestamp", "1"}},
			keep:   map[string]string{"Webhook-Id": "msg_s1", "Svix-Id": ""}},
		{name: "Svix", provider: "standard", body: `{"type":"user.deleted"}`, id: "msg_x1", topic: "user.deleted",
			header: [][2]string{{"svix-id", "msg_x1"}, {"svix-timestamp", "1"}},
			keep:   map[string]string{"Svix-Id": "msg_x1", "Webhook-Id": "msg_x1"}},
		{name: "HMACHex", provider: "hmac", body: `{"n":1}`, sig: &app.StreamSignature{Header: "X-Checksum", Prefix: "sha256="},
			header: [][2]string{{"X-Event", "thing"}}, keep: map[string]string{"X-Event": "thing"}},
		{name: "HMACBase64", provider: "hmac", body: `{"n":2}`, sig: &app.StreamSignature{Header: "x-erp-mac", Encoding: "base64"}},
		{name: "Token", provider: "token", body: `{"n":3}`, id: "idem-1", topic: "erp.sync",
			header: [][2]string{{"X-Event-Type", "erp.sync"}}},
	}
}

// Every provider hookbox verifies: the forward of an event whose stream
// message carries no signature is signed with the listen secret in the
// provider's scheme (Stripe, Paddle and Standard Webhooks with a fresh
// timestamp, Square over the -forward URL), so that hookbox's own verifier
// given the listen secret accepts it, and reads the same id and topic;
// the headers the sender sent (ids, topics, domains) stay as they were.
func TestListener_SignsEachProvider(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwC0ffee12345="
	cases := signCases()
	// A clock a day from now: a timestamp the stream could carry is stale
	// then, so the signer's must be fresh.
	now := time.Now().Add(24 * time.Hour)
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamHeader(w)
		sseNotice(w, app.StreamNoticeReady, "live")
		for i, c := range cases {
			id := c.id
			if c.provider == "token" {
				id = "idem-1" // the token provider's id is the Idempotency-Key
			}
			sseEvent(w, app.StreamEvent{Seq: uint64(i + 1), Source: c.name, ID: id, Topic: c.topic, Provider: c.provider,
				Signature: c.sig, Header: c.header, Body: []byte(c.body)})
		}
		<-r.Context().Done()
	}))
	t.Cleanup(stream.Close)
	local, got := localApp(t, http.StatusOK)
	forward := local.URL + "/hooks?x=1"
	out := newOutput()
	run(t, &listen.Listener{Remote: stream.URL, Forward: forward, Token: "hbx_t", Secret: secret, Out: out,
		Now: func() time.Time { return now }})
	out.wait(t, "→ 200 OK", len(cases))
	if strings.Contains(out.String(), "unsigned") {
		t.Fatalf("a forward went unsigned:\n%s", out)
	}
	for _, c := range cases {
		r := <-got
		t.Run(c.name, func(t *testing.T) {
			if string(r.body) != c.body {
				t.Fatalf("body %q, want %q", r.body, c.body)
			}
			s := provider.Settings{Secrets: [][]byte{[]byte(secret)}}
			if c.sig != nil {
				s.SignatureHeader, s.SignatureEncoding, s.SignaturePrefix = c.sig.Header, c.sig.Encoding, c.sig.Prefix
			}
			v, err := provider.New(c.provider, s)
			if err != nil {
				t.Fatal(err)
			}
			verdict, err := v(provider.Request{Body: r.body, Header: r.header, URL: forward}, now)
			if err != nil {
				t.Fatalf("hookbox's %s verifier with the listen secret: %v; headers %v", c.provider, err, r.header)
			}
			if c.id != "" && verdict.ID != c.id || verdict.Topic != c.topic {
				t.Errorf("verdict id %q topic %q, want %q %q", verdict.ID, verdict.Topic, c.id, c.topic)
			}
			for k, want := range c.keep {
				if got := r.header.Get(k); got != want {
					t.Errorf("header %s: %q, want %q", k, got, want)
				}
			}
			// Another secret does not verify it: the signature is the
			// listen secret's, not a pass.
			s.Secrets = [][]byte{[]byte("whsec_" + strings.Repeat("A", 43) + "=")}
			other, _ := provider.New(c.provider, s)
			if _, err := other(provider.Request{Body: r.body, Header: r.header, URL: forward}, now); err == nil {
				t.Errorf("a wrong secret verifies the forward too")
			}
		})
	}
}

// The listen secret: the same for the same token (or user and password)
// every time, another for another; always of the form every scheme takes;
// a -secret of another form ends Run before it connects.
func TestListenSecret(t *testing.T) {
	a, b := listen.TokenSecret("hbx_one"), listen.TokenSecret("hbx_two")
	if a != listen.TokenSecret("hbx_one") || a == b || strings.Contains(a, "hbx_one") {
		t.Fatalf("token secrets %q, %q", a, b)
	}
	p := listen.PasswordSecret("ops", "pw-1-long")
	if p != listen.PasswordSecret("ops", "pw-1-long") || p == listen.PasswordSecret("ann", "pw-1-long") || p == listen.PasswordSecret("ops", "pw-2-long") {
		t.Fatalf("password secrets differ or collide")
	}
	for _, s := range []string{a, b, p, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		if err := listen.CheckSecret(s); err != nil {
			t.Errorf("CheckSecret(%q): %v", s, err)
		}
		if _, err := provider.New("standard", provider.Settings{Secrets: [][]byte{[]byte(s)}}); err != nil {
			t.Errorf("Standard Webhooks refuses %q: %v", s, err)
		}
	}
	for _, s := range []string{"", "secret", "whsec_", "whsec_c2hvcnQ=", "whsec_not base64!", "whsec_" + strings.Repeat("QUFB", 30)} {
		if err := listen.CheckSecret(s); err == nil {
			t.Errorf("CheckSecret(%q) accepted it", s)
		}
		err := (&listen.Listener{Remote: "http://127.0.0.1:1", Forward: "http://127.0.0.1:1", Token: "t", Secret: s + "x"}).Run(t.Context())
		var fatal *listen.FatalError
		if !errors.As(err, &fatal) || strings.Contains(err.Error(), s+"x") {
			t.Errorf("Run with secret %q: %v, want a FatalError that does not quote it", s, err)
		}
	}
}
