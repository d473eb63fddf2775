package app_test

import (
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/provider"
)

func TestMaskHeaders(t *testing.T) {
	masked := []string{"Authorization", "X-Auth-Key", "X-Api-Key", "Api-Key", "X-Api-Token", "Stripe-Signature",
		"X-Hub-Signature-256", "X-Shopify-Hmac-Sha256", "X-Square-Hmacsha256-Signature", "Webhook-Signature", "X-Sig",
		"Cookie", "Set-Cookie", "X-Session-Id", "X-Db-Password", "X-Passwd", "X-Webhook-Secret", "X-Csrf-Token",
		"X-Xsrf-Token", "X-Upstream-Credential", "X-Jwt", "Idempotency-Key", "X-WC-Webhook-Signature", "Paddle-Signature", "Svix-Signature", "X-Checksum"}
	shown := []string{"Content-Type", "X-Shopify-Topic", "X-Shopify-Shop-Domain", "X-GitHub-Event", "X-GitHub-Delivery",
		"User-Agent", "Webhook-Id", "Webhook-Timestamp", "X-Request-Id"}
	var h []app.HeaderField
	for _, n := range append(append([]string{}, masked...), shown...) {
		h = append(h, app.HeaderField{Name: n, Value: "value-of-" + n})
	}
	// An hmac source's signature header is masked whatever its name.
	src := &app.Source{Name: "erp", Provider: "hmac", Settings: provider.Settings{SignatureHeader: "x-checksum"}}
	rows := app.MaskHeaders(h, src)
	for i, r := range rows {
		wantMasked := i < len(masked)
		if r.Masked != wantMasked || strings.Contains(r.Value, "value-of-") == wantMasked {
			t.Errorf("%s: shown as %q (masked %v), want masked %v", r.Name, r.Value, r.Masked, wantMasked)
		}
	}
}
