package dispatch_test

import (
	"net/http"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
)

// What the domain's tests share with the receiver's (app/receive keeps
// its own copy): the clock's start, a config of one source per provider,
// and signed requests.

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

// signed builds an inbound request for a source, signed with secret.
func signed(t testing.TB, prov, secret string, body []byte, url, id, topic string, at time.Time) *app.Inbound {
	t.Helper()
	h, err := provider.Sign(prov, provider.Settings{Secrets: [][]byte{[]byte(secret)}, SignatureHeader: "X-Signature", SignaturePrefix: "sha256="},
		body, url, id, topic, at)
	if err != nil {
		t.Fatal(err)
	}
	return inbound(body, h)
}

func inbound(body []byte, h http.Header) *app.Inbound {
	in := &app.Inbound{Body: body}
	for k, vs := range h {
		for _, v := range vs {
			in.Header = append(in.Header, app.HeaderField{Name: k, Value: v})
		}
	}
	return in
}
