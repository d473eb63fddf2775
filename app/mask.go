package app

import (
	"fmt"
	"strings"

	"hookbox/app/provider"
)

// MaskedHeader is a header as the page and the admin API show it.
type MaskedHeader struct {
	Name, Value string
	// Masked reports that Value is the mask, not the value received.
	Masked bool
}

// secretWords, found in a header's name, mark its value as a secret (a
// credential, a signature, a session): X-Auth-Key, X-Api-Token,
// Stripe-Signature, X-Shopify-Hmac-Sha256, Cookie, X-Session-Id…
var secretWords = []string{"auth", "key", "token", "sig", "secret", "cookie", "pass", "session", "hmac", "credential", "jwt", "csrf", "xsrf"}

// secretish reports whether a header's value may be a secret.
func secretish(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// SecretHeader reports whether a viewer never reads the value of the
// header name of an event of src: what makes a request genuine or
// authenticates it. It is the one rule of the pages, the admin API
// (MaskHeaders: masked) and the stream (StreamEventOf: left out): a header
// whose name says credential or signature (secretish: X-Api-Key,
// Stripe-Signature, Cookie), one a provider signs or authenticates with
// (provider.SignatureHeader: Authorization, X-Hub-Signature-256,
// Webhook-Signature), and the signature header src's config names (an
// hmac source's signature_header, whatever it is called: X-Checksum). A
// nil src (a source no longer configured) goes by the name only.
func SecretHeader(src *Source, name string) bool {
	if secretish(name) || provider.SignatureHeader(name) {
		return true
	}
	return src != nil && src.Settings.SignatureHeader != "" && strings.EqualFold(name, src.Settings.SignatureHeader)
}

// MaskHeaders returns the headers of an event of src as the page and the
// admin API show them: the values of SecretHeader replaced by a mask.
func MaskHeaders(h []HeaderField, src *Source) []MaskedHeader {
	out := make([]MaskedHeader, 0, len(h))
	for _, f := range h {
		if SecretHeader(src, f.Name) {
			out = append(out, MaskedHeader{f.Name, fmt.Sprintf("•••• (%d characters, masked)", len(f.Value)), true})
		} else {
			out = append(out, MaskedHeader{f.Name, f.Value, false})
		}
	}
	return out
}
