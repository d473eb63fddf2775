package provider

import "strings"

// signatureHeaders are the lower-case names of the headers that carry a
// provider's signature or a sender's credential, whichever provider sent
// them: a destination that should verify hookbox's own signature instead
// (forward_signatures = false) gets none of them. The generic hmac
// provider's header is configured per source (Settings.SignatureHeader).
var signatureHeaders = map[string]bool{
	"x-shopify-hmac-sha256":         true,
	"shopify-hmac-sha256":           true,
	"stripe-signature":              true,
	"x-wc-webhook-signature":        true,
	"x-hub-signature-256":           true,
	"x-hub-signature":               true,
	"x-square-hmacsha256-signature": true,
	"x-square-signature":            true,
	"paddle-signature":              true,
	"authorization":                 true,
	"proxy-authorization":           true,
}

// SignatureHeader reports whether the header named name carries a
// provider's signature or a sender's credential.
func SignatureHeader(name string) bool { return signatureHeaders[strings.ToLower(name)] }
