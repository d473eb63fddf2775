package provider

import (
	"net/http"
	"time"
)

// BigCommerce sends Standard Webhooks headers, but its key is the raw bytes
// of the app's client secret (no base64, no "whsec_" stripping). The event id
// is the body's "hash" and the topic its "scope".

func init() {
	register("bigcommerce", newBigCommerce)
	registerSigner("bigcommerce", signBigCommerce)
}

func newBigCommerce(s Settings) (Verifier, error) {
	if len(s.Secrets) == 0 {
		return nil, errNoSecret
	}
	c, err := newSWCore(s, s.Secrets)
	if err != nil {
		return nil, err
	}
	return func(r Request, now time.Time) (Verdict, error) {
		if _, err := c.verify(r, now); err != nil {
			return Verdict{}, err
		}
		var b struct {
			Hash  string `json:"hash"`
			Scope string `json:"scope"`
		}
		decodeBody(r.Body, &b)
		return Verdict{ID: b.Hash, Topic: b.Scope}, nil
	}, nil
}

func signBigCommerce(s Settings, body []byte, _, id, _ string, now time.Time, h http.Header) error {
	signSW(s.Secrets[0], body, id, now, h)
	return nil
}
