package provider

import (
	"net/http"
	"net/textproto"
	"strings"
	"time"
)

// boundHeaders are the headers besides the signature that a scheme signs
// with it (Standard Webhooks' and Svix's id and timestamp): a re-signed
// request carries the signer's, never the ones received.
var boundHeaders = map[string]bool{
	hdrSWID: true, hdrSWTimestamp: true, hdrSvixID: true, hdrSvixTime: true,
}

// Resign returns the headers received (canonical names) with the
// signature of provider name, made with s.Secrets[0] at now, in place of
// the sender's, so that New(name, s) accepts the request, and so does the
// provider's own library given the same secret. It is how `hookbox
// listen` forwards an event it never got the signature of.
//
// The headers that carry a signature or a credential (SignatureHeader,
// an hmac source's configured header) or that a scheme signs with it (a
// timestamp, Standard Webhooks' id) are the signer's; the others the signer
// writes (ids, topics, a shop domain, Content-Type) are added only when
// received lacks them, so what the sender said stays as it was. id and
// topic are the event's, for the providers that read them from headers;
// url is where the request goes (Square signs it). A Shopify request is
// signed in the header form it came in (legacy, new or both); a Standard
// Webhooks or BigCommerce one keeps the webhook id it came with and, when
// it came under Svix's names, gets them too.
func Resign(name string, s Settings, body []byte, url, id, topic string, received http.Header, now time.Time) (http.Header, error) {
	o := SignOptions{}
	svix := false
	switch name {
	case "shopify":
		o.ShopifyHeaders = shopifyForm(received)
	case "standard", "bigcommerce":
		if v := firstHeader(received, hdrSWID, hdrSvixID); v != "" {
			id = v
		}
		svix = received.Get(hdrSvixID) != ""
	}
	signed, err := SignWith(name, s, body, url, id, topic, now, o)
	if err != nil {
		return nil, err
	}
	hmacHeader := ""
	if name == "hmac" {
		hmacHeader = textproto.CanonicalMIMEHeaderKey(s.SignatureHeader)
	}
	bound := func(k string) bool { return SignatureHeader(k) || boundHeaders[k] || k == hmacHeader }
	out := make(http.Header, len(received)+len(signed)+3)
	for k, v := range received {
		if !bound(k) {
			out[k] = v
		}
	}
	for k, v := range signed {
		if bound(k) || len(out[k]) == 0 {
			out[k] = v
		}
	}
	if svix {
		out[hdrSvixID] = signed[hdrSWID]
		out[hdrSvixTime] = signed[hdrSWTimestamp]
		out[hdrSvixSig] = signed[hdrSWSignature]
	}
	return out, nil
}

// shopifyForm is the form of the Shopify headers in h: ShopifyBoth when
// it has both X-Shopify-* and Shopify-* names, ShopifyNew for the new
// ones only, else ShopifyLegacy.
func shopifyForm(h http.Header) string {
	legacy, fresh := false, false
	for k := range h {
		switch {
		case strings.HasPrefix(k, "X-Shopify-"):
			legacy = true
		case strings.HasPrefix(k, "Shopify-"):
			fresh = true
		}
	}
	switch {
	case legacy && fresh:
		return ShopifyBoth
	case fresh:
		return ShopifyNew
	}
	return ShopifyLegacy
}
