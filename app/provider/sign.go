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

// signers maps a provider name to its signing side.
var signers = map[string]signer{}

// registerSigner is called from each provider's file next to register.
func registerSigner(name string, f signer) { signers[name] = f }

// Sign returns the headers a genuine sender of provider name would send with
// body, signed with s.Secrets[0] at time now, so that New(name, s) accepts
// the request; id and topic go into the provider's headers where it reads
// them from headers (where it reads them from the body, body must carry them).
func Sign(name string, s Settings, body []byte, url, id, topic string, now time.Time) (http.Header, error) {
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
	if err := f(s, body, url, id, topic, now, h); err != nil {
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
