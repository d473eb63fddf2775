package provider

import "net/textproto"

// signatureHeaders are the canonical names of the headers that carry a
// provider's signature or a sender's credential, whichever provider sent
// them: what makes a request genuine. A destination that should verify
// hookbox's own signature instead (forward_signatures = false) gets none
// of them, a viewer reads none of them (app.SecretHeader) and `hookbox
// listen` writes its own in their place (Resign). The generic hmac
// provider's header is configured per source (Settings.SignatureHeader).
var signatureHeaders = map[string]bool{
	"X-Shopify-Hmac-Sha256":         true,
	"Shopify-Hmac-Sha256":           true,
	"Stripe-Signature":              true,
	"X-Wc-Webhook-Signature":        true,
	"X-Hub-Signature-256":           true,
	"X-Hub-Signature":               true,
	"X-Square-Hmacsha256-Signature": true,
	"X-Square-Signature":            true,
	"Paddle-Signature":              true,
	"Webhook-Signature":             true, // Standard Webhooks, BigCommerce
	"Svix-Signature":                true,
	"Authorization":                 true,
	"Proxy-Authorization":           true,
}

// SignatureHeader reports whether the header named name carries a
// provider's signature or a sender's credential.
func SignatureHeader(name string) bool {
	return signatureHeaders[textproto.CanonicalMIMEHeaderKey(name)]
}
