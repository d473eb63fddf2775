package app

import (
	"fmt"
	"strings"
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

// MaskHeaders returns the headers as the page and the admin API show them:
// signature and credential values replaced by a mask.
func MaskHeaders(h []HeaderField) []MaskedHeader {
	out := make([]MaskedHeader, 0, len(h))
	for _, f := range h {
		if secretish(f.Name) {
			out = append(out, MaskedHeader{f.Name, fmt.Sprintf("•••• (%d characters, masked)", len(f.Value)), true})
		} else {
			out = append(out, MaskedHeader{f.Name, f.Value, false})
		}
	}
	return out
}
