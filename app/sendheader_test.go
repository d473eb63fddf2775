package app_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"hookbox/app"
	"hookbox/app/config"
)

// destSecret is a destination's Standard Webhooks secret.
const destSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// The header of a delivery, as received and transformed, to a destination
// that forwards signatures and one that does not: with a transformed body
// the provider's signatures (in every spelling) and the headers that
// described the sender's body never go, the transform's Content-Type
// takes the place of the sender's and of the destination's configured
// one, and the signature is over the transformed body; as received,
// the header is what it always was.
func TestOutbound_HeaderTransformed(t *testing.T) {
	cfg, err := config.Parse("t.toml", `
[[source]]
name = "mine"
provider = "hmac"
secret = "mine-secret"
signature_header = "X-Signature"
id = "{header.X-Id}"
[[destination]]
name = "fwd"
url = "http://127.0.0.1:1/"
secret = "`+destSecret+`"
signature_headers = "svix"
headers = { Content-Type = "text/configured", X-Api-Key = "k" }
[[destination]]
name = "nofwd"
url = "http://127.0.0.1:1/"
secret = "`+destSecret+`"
forward_signatures = false
[[route]]
source = "mine"
to = ["fwd", "nofwd"]
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := app.NewOutbound(cfg, "dev")
	e := &app.Event{Source: "mine", ID: "e1", Topic: "t", Body: []byte(`{"a":1}`), Header: []app.HeaderField{
		{Name: "Content-Type", Value: "application/json"}, {Name: "Content-Md5", Value: "x"}, {Name: "Digest", Value: "x"},
		{Name: "X-Signature", Value: "sig"}, {Name: "X-Shopify-Hmac-Sha256", Value: "sig"}, {Name: "Stripe-Signature", Value: "sig"},
		{Name: "Authorization", Value: "Bearer t"}, {Name: "X_Hub_Signature_256", Value: "sig"}, {Name: "Content_Md5", Value: "x"},
		{Name: "X-Id", Value: "e1"}, {Name: "X-Custom", Value: "kept"},
	}}
	tr := &app.Transformed{Body: []byte(`{"text":"hi"}`), ContentType: "application/json; charset=utf-8"}
	sigs := []string{"X-Signature", "X-Shopify-Hmac-Sha256", "Stripe-Signature", "Authorization", "X_hub_signature_256"}
	bodyHeaders := []string{"Content-Md5", "Digest", "Content_md5"}
	wh, err := standardwebhooks.NewWebhook(destSecret)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, tt := range []struct {
		dest         string
		t            *app.Transformed
		ctype        string
		sigs, bodyHs bool // whether they go
	}{
		{"fwd", nil, "text/configured", true, true},
		{"nofwd", nil, "application/json", false, true},
		{"fwd", tr, tr.ContentType, false, false},
		{"nofwd", tr, tr.ContentType, false, false},
		{"nofwd", &app.Transformed{Body: []byte("hi")}, "", false, false},
	} {
		name := tt.dest + map[bool]string{true: "/as-received", false: "/transformed"}[tt.t == nil]
		t.Run(name, func(t *testing.T) {
			h, err := out.Header(cfg.DestinationByName(tt.dest), e, tt.t, 1, now)
			if err != nil {
				t.Fatal(err)
			}
			if got := h.Values("Content-Type"); tt.ctype == "" && len(got) != 0 || tt.ctype != "" && !slices.Equal(got, []string{tt.ctype}) {
				t.Errorf("Content-Type %q; want %q", got, tt.ctype)
			}
			for _, n := range sigs {
				if got := len(h.Values(n)) > 0; got != tt.sigs {
					t.Errorf("%s goes: %v; want %v", n, got, tt.sigs)
				}
			}
			for _, n := range bodyHeaders {
				if got := len(h.Values(n)) > 0; got != tt.bodyHs {
					t.Errorf("%s goes: %v; want %v", n, got, tt.bodyHs)
				}
			}
			if h.Get("X-Custom") != "kept" {
				t.Errorf("X-Custom lost: %v", h)
			}
			body := e.Body
			if tt.t != nil {
				body = tt.t.Body
			}
			if err := wh.Verify(body, h); err != nil {
				t.Errorf("webhook-signature over the body sent: %v", err)
			}
			if tt.dest == "fwd" {
				sv := http.Header{"Webhook-Id": {h.Get("Svix-Id")}, "Webhook-Timestamp": {h.Get("Svix-Timestamp")}, "Webhook-Signature": {h.Get("Svix-Signature")}}
				if err := wh.Verify(body, sv); err != nil {
					t.Errorf("svix-signature over the body sent: %v", err)
				}
			}
		})
	}
}

// A fetched event goes out saying so (X-Hookbox-Origin), signed by hookbox
// for a destination with a secret, with no provider signature (it has
// none); a webhook's delivery has no such header.
func TestOutbound_HeaderFetched(t *testing.T) {
	cfg, err := config.Parse("t.toml", `
[[source]]
name = "pay"
provider = "stripe"
secret = "whsec_x"
[[destination]]
name = "erp"
url = "http://127.0.0.1:1/"
secret = "`+destSecret+`"
[[route]]
source = "pay"
to = ["erp"]
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := app.NewOutbound(cfg, "dev")
	body := []byte(`{"id":"evt_1","type":"charge.succeeded"}`)
	fetched := &app.Event{Source: "pay", ID: "evt_1", Topic: "charge.succeeded", Body: body, Origin: app.OriginFetched,
		Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}}}
	now := time.Now()
	h, err := out.Header(cfg.DestinationByName("erp"), fetched, nil, 1, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("X-Hookbox-Origin"); got != "fetched" || h.Get("Stripe-Signature") != "" {
		t.Errorf("X-Hookbox-Origin = %q, Stripe-Signature %q; want fetched and none", got, h.Get("Stripe-Signature"))
	}
	wh, err := standardwebhooks.NewWebhook(destSecret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, h); err != nil {
		t.Errorf("hookbox's signature does not verify: %v", err)
	}
	plain := *fetched
	plain.Origin = ""
	if h, _ := out.Header(cfg.DestinationByName("erp"), &plain, nil, 1, now); h.Get("X-Hookbox-Origin") != "" {
		t.Errorf("a webhook's delivery has X-Hookbox-Origin %q", h.Get("X-Hookbox-Origin"))
	}
}
