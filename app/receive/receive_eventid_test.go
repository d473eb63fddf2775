package receive_test

import (
	"context"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/receive"
)

// A genuine request without an event id is answered 400 with where the
// provider's rule (or the source's id template) looked for it, so that
// the person testing knows which header or field to send.
func TestReceiver_NoEventIDSaysWhere(t *testing.T) {
	const cfgText = `
[server]
public_url = "https://hooks.example.com"
[[source]]
name = "shop"
provider = "shopify"
secret = "shop-secret"
[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"
[[source]]
name = "stripe"
provider = "stripe"
secret = "whsec_test"
[[source]]
name = "paddle"
provider = "paddle"
secret = "pdl-secret"
[[source]]
name = "sq"
provider = "square"
secret = "sq-secret"
[[source]]
name = "bc"
provider = "bigcommerce"
secret = "bc-secret"
[[source]]
name = "erp"
provider = "hmac"
secret = "erp-secret"
signature_header = "X-Signature"
signature_prefix = "sha256="
id = "{header.X-Event-Id}"
`
	cfg, err := config.Parse("test.toml", cfgText, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := now0
	r := receive.New(cfg, apptest.NewStore())
	r.Now = func() time.Time { return now }
	for _, tt := range []struct {
		source, prov, secret, url, body, want string
	}{
		{"shop", "shopify", "shop-secret", "", `{"id": 1}`,
			"no event id: provider shopify reads it from the X-Shopify-Event-Id or X-Shopify-Webhook-Id header (or the newer shopify-event-id or shopify-webhook-id)"},
		{"gh", "github", "gh-secret", "", `{"zen": "x"}`, "no event id: provider github reads it from the X-GitHub-Delivery header"},
		{"stripe", "stripe", "whsec_test", "", `{"type": "charge.succeeded"}`, `no event id: provider stripe reads it from the body's "id" field`},
		{"paddle", "paddle", "pdl-secret", "", `{"event_type": "transaction.paid"}`, `no event id: provider paddle reads it from the body's "event_id" field`},
		{"sq", "square", "sq-secret", "https://hooks.example.com/in/sq", `{"type": "payment.updated"}`, `no event id: provider square reads it from the body's "event_id" field`},
		{"bc", "bigcommerce", "bc-secret", "", `{"scope": "store/order/created"}`, `no event id: provider bigcommerce reads it from the body's "hash" field`},
		{"erp", "hmac", "erp-secret", "", `{"id": 1}`, `no event id: source erp reads it with id = "{header.X-Event-Id}": {header.X-Event-Id}: field missing`},
	} {
		t.Run(tt.prov, func(t *testing.T) {
			_, err := r.Receive(context.Background(), tt.source, apptest.Signed(t, tt.prov, tt.secret, []byte(tt.body), tt.url, "", "", now))
			if app.ErrorCode(err) != app.EINVALID {
				t.Fatalf("err = %v, want EINVALID (400)", err)
			}
			if got := app.ErrorMessage(err); got != tt.want {
				t.Fatalf("message = %q\nwant      %q", got, tt.want)
			}
		})
	}
}
