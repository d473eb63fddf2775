package provider

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"time"
)

// WooCommerce signs the raw body: std base64 HMAC-SHA256. It sends no stable
// event id, so the id is the body's SHA-256: a redelivery of the same bytes
// is a duplicate. When a hook is created it posts an unsigned form-encoded
// "webhook_id=N" that must be answered 200 without storing anything.
const (
	hdrWooSignature = "X-Wc-Webhook-Signature" // canonical form of X-WC-Webhook-Signature
	hdrWooTopic     = "X-Wc-Webhook-Topic"     // canonical form of X-WC-Webhook-Topic
	wooPingPrefix   = "webhook_id="
	wooPingMaxDigit = 20
)

func init() {
	register("woocommerce", newWooCommerce)
	registerSigner("woocommerce", signWooCommerce)
}

func newWooCommerce(s Settings) (Verifier, error) {
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, _ time.Time) (Verdict, error) {
		v := r.Header.Get(hdrWooSignature)
		if v == "" {
			if isWooPing(r.Body) {
				return Verdict{Ping: true}, nil
			}
			return Verdict{}, ErrMissingSignature
		}
		var sig [macSize]byte
		if !decodeBase64(v, &sig, false) {
			return Verdict{}, ErrMalformed
		}
		if !matchOne(keys, &message{body: r.Body}, &sig) {
			return Verdict{}, ErrBadSignature
		}
		sum := sha256.Sum256(r.Body)
		return Verdict{ID: hex.EncodeToString(sum[:]), Topic: r.Header.Get(hdrWooTopic)}, nil
	}, nil
}

// isWooPing reports whether body is exactly "webhook_id=" and 1 to 20 digits.
func isWooPing(body []byte) bool {
	if len(body) <= len(wooPingPrefix) || len(body) > len(wooPingPrefix)+wooPingMaxDigit {
		return false
	}
	if string(body[:len(wooPingPrefix)]) != wooPingPrefix {
		return false
	}
	for _, c := range body[len(wooPingPrefix):] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func signWooCommerce(s Settings, body []byte, _, _, topic string, _ time.Time, h http.Header) error {
	mac := computeMAC(s.Secrets[0], &message{body: body})
	h.Set(hdrWooSignature, base64.StdEncoding.EncodeToString(mac))
	setIf(h, hdrWooTopic, topic)
	return nil
}
