package provider

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"
)

// signer writes into h the headers a genuine sender of one provider sends
// for body, signed with key (the first secret of s).
type signer func(s Settings, body []byte, url, id, topic string, now time.Time, h http.Header) error

// optSigner is a signer that also takes the SignOptions that concern it.
type optSigner func(s Settings, body []byte, url, id, topic string, now time.Time, o SignOptions, h http.Header) error

// signers maps a provider name to its signing side.
var signers = map[string]optSigner{}

// registerSigner is called from each provider's file next to register.
func registerSigner(name string, f signer) {
	signers[name] = func(s Settings, body []byte, url, id, topic string, now time.Time, _ SignOptions, h http.Header) error {
		return f(s, body, url, id, topic, now, h)
	}
}

// registerOptSigner is registerSigner for a provider with sign options.
func registerOptSigner(name string, f optSigner) { signers[name] = f }

// SignOptions are a test sender's choices that the verifier accepts either way.
type SignOptions struct {
	// ShopifyHeaders is the form of Shopify's headers: ShopifyLegacy ("",
	// the default), ShopifyNew or ShopifyBoth.
	ShopifyHeaders string
}

// Sign returns the headers a genuine sender of provider name would send with
// body, signed with s.Secrets[0] at time now, so that New(name, s) accepts
// the request; id and topic go into the provider's headers where it reads
// them from headers (where it reads them from the body, body must carry them).
func Sign(name string, s Settings, body []byte, url, id, topic string, now time.Time) (http.Header, error) {
	return SignWith(name, s, body, url, id, topic, now, SignOptions{})
}

// SignWith is Sign with the options o.
func SignWith(name string, s Settings, body []byte, url, id, topic string, now time.Time, o SignOptions) (http.Header, error) {
	f, ok := signers[name]
	if !ok {
		return nil, fmt.Errorf("unknown provider %q", name)
	}
	// The verifier's factory validates the settings the same way for both sides.
	if _, err := New(name, s); err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(hdrContentType, "application/json")
	if err := f(s, body, url, id, topic, now, o, h); err != nil {
		return nil, err
	}
	return h, nil
}

// setIf sets a header only when the value is not empty.
func setIf(h http.Header, name, value string) {
	if value != "" {
		h.Set(name, value)
	}
}

// randomID returns prefix followed by 32 random hex digits.
func randomID(prefix string) string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead).
	return prefix + hex.EncodeToString(b[:])
}
