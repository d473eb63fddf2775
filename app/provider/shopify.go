package provider

import (
	"encoding/base64"
	"net/http"
	"time"
)

// Shopify signs the raw body: std base64 HMAC-SHA256 with the app's client
// secret. It rotates secrets over up to an hour, so several may be configured.
const (
	hdrShopifyHMAC    = "X-Shopify-Hmac-Sha256"
	hdrShopifyEventID = "X-Shopify-Event-Id"
	hdrShopifyHookID  = "X-Shopify-Webhook-Id"
	hdrShopifyTopic   = "X-Shopify-Topic"
)

func init() {
	register("shopify", newShopify)
	registerSigner("shopify", signShopify)
}

func newShopify(s Settings) (Verifier, error) {
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, _ time.Time) (Verdict, error) {
		v := r.Header.Get(hdrShopifyHMAC)
		if v == "" {
			return Verdict{}, ErrMissingSignature
		}
		var sig [macSize]byte
		if !decodeBase64(v, &sig, false) {
			return Verdict{}, ErrMalformed
		}
		if !matchOne(keys, &message{body: r.Body}, &sig) {
			return Verdict{}, ErrBadSignature
		}
		id := r.Header.Get(hdrShopifyEventID)
		if id == "" {
			id = r.Header.Get(hdrShopifyHookID)
		}
		return Verdict{ID: id, Topic: r.Header.Get(hdrShopifyTopic)}, nil
	}, nil
}

func signShopify(s Settings, body []byte, _, id, topic string, _ time.Time, h http.Header) error {
	mac := computeMAC(s.Secrets[0], &message{body: body})
	h.Set(hdrShopifyHMAC, base64.StdEncoding.EncodeToString(mac))
	setIf(h, hdrShopifyHookID, id)
	setIf(h, hdrShopifyEventID, id)
	setIf(h, hdrShopifyTopic, topic)
	return nil
}
