package provider

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Shopify signs the raw body: std base64 HMAC-SHA256 with the app's client
// secret. It rotates secrets over up to an hour, so several may be configured.
//
// It sends its headers in two forms: the legacy X-Shopify-* names, and
// (since 2026, for now beside them) lowercase shopify-* names. Its own
// library (@shopify/shopify-api, lib/webhooks/validate.ts: detectWebhookType)
// checks the new HMAC whenever one is present, and then only that one: a
// wrong legacy HMAC beside a right new one is accepted, a right legacy HMAC
// beside a wrong new one is refused. hookbox does the same.
const (
	hdrShopifyHMAC    = "X-Shopify-Hmac-Sha256"
	hdrShopifyEventID = "X-Shopify-Event-Id"
	hdrShopifyHookID  = "X-Shopify-Webhook-Id"
	hdrShopifyTopic   = "X-Shopify-Topic"
	hdrShopifyDomain  = "X-Shopify-Shop-Domain"
	hdrShopifyVersion = "X-Shopify-API-Version"
	hdrShopifyAt      = "X-Shopify-Triggered-At"

	// The new form, in net/http's canonical spelling (Get allocates for any other).
	hdrShopifyHMACNew    = "Shopify-Hmac-Sha256"
	hdrShopifyEventIDNew = "Shopify-Event-Id"
	hdrShopifyHookIDNew  = "Shopify-Webhook-Id"
	hdrShopifyTopicNew   = "Shopify-Topic"
)

// ShopifyAPIVersion is the API-Version header `hookbox sign` sends: the
// newest stable version when this was written. Shopify's library requires
// the header and reports it, but does not check its value.
const ShopifyAPIVersion = "2026-10"

// ShopifyShopDomain is the Shop-Domain header `hookbox sign` sends.
const ShopifyShopDomain = "hookbox-test.myshopify.com"

// The header forms a Shopify request can be signed in (SignOptions.ShopifyHeaders).
const (
	ShopifyLegacy = "legacy" // X-Shopify-* only, the default
	ShopifyNew    = "new"    // shopify-* only
	ShopifyBoth   = "both"   // both, as Shopify sends its events webhooks today
)

// ShopifyHeaderForms lists the valid values of SignOptions.ShopifyHeaders.
var ShopifyHeaderForms = []string{ShopifyLegacy, ShopifyNew, ShopifyBoth}

// shopifyTwins names the headers Shopify sends in both forms, by their
// suffix after "x-shopify-" or "shopify-". Events-only headers
// (shopify-handle, -action, -resource-id) and the legacy-only
// X-Shopify-Name have no twin.
var shopifyTwins = []string{"hmac-sha256", "topic", "shop-domain", "api-version", "event-id", "webhook-id", "triggered-at"}

func init() {
	register("shopify", newShopify)
	registerOptSigner("shopify", signShopify)
	registerHeaders("shopify", shopifyHeader)
}

func newShopify(s Settings) (Verifier, error) {
	keys, err := newKeys(s)
	if err != nil {
		return nil, err
	}
	return func(r Request, _ time.Time) (Verdict, error) {
		// The new form wins whenever present, as in Shopify's library; an
		// empty header counts as absent there too.
		v := r.Header.Get(hdrShopifyHMACNew)
		if v == "" {
			v = r.Header.Get(hdrShopifyHMAC)
		}
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
		return Verdict{
			ID:    firstHeader(r.Header, hdrShopifyEventIDNew, hdrShopifyHookIDNew, hdrShopifyEventID, hdrShopifyHookID),
			Topic: firstHeader(r.Header, hdrShopifyTopicNew, hdrShopifyTopic),
		}, nil
	}, nil
}

// firstHeader returns the first non-empty value of the named headers.
func firstHeader(h Header, names ...string) string {
	for _, n := range names {
		if v := h.Get(n); v != "" {
			return v
		}
	}
	return ""
}

// signShopify writes the headers Shopify sends with a webhook: the legacy
// form by default, the new one or both on request. Shopify's library
// refuses a request without Topic, Shop-Domain, API-Version and Webhook-Id
// (and its newer releases, in the new form, without Event-Id).
func signShopify(s Settings, body []byte, _, id, topic string, now time.Time, o SignOptions, h http.Header) error {
	form := o.ShopifyHeaders
	if form == "" {
		form = ShopifyLegacy
	}
	if err := CheckShopifyHeaders(form); err != nil {
		return err
	}
	mac := base64.StdEncoding.EncodeToString(computeMAC(s.Secrets[0], &message{body: body}))
	// Shopify's webhook id is a UUID per delivery; hookbox dedups on it when
	// no event id comes, so a random one would make every retry of a test
	// new. Both carry the test's event id.
	pairs := [][2]string{
		{hdrShopifyHMAC, mac},
		{hdrShopifyTopic, topic},
		{hdrShopifyDomain, ShopifyShopDomain},
		{hdrShopifyVersion, ShopifyAPIVersion},
		{hdrShopifyHookID, id},
		{hdrShopifyEventID, id},
		{hdrShopifyAt, now.UTC().Format(time.RFC3339Nano)},
	}
	for _, p := range pairs {
		if form != ShopifyNew {
			setIf(h, p[0], p[1])
		}
		if form != ShopifyLegacy {
			setIf(h, strings.TrimPrefix(p[0], "X-"), p[1])
		}
	}
	return nil
}

// CheckShopifyHeaders reports whether form is a header form Shopify's
// signer knows, with an error that lists the valid ones.
func CheckShopifyHeaders(form string) error {
	for _, f := range ShopifyHeaderForms {
		if form == f {
			return nil
		}
	}
	return fmt.Errorf("unknown Shopify header form %q (use %s)", form, strings.Join(ShopifyHeaderForms, ", "))
}

// shopifyTwin returns the other form's name of one of Shopify's twin
// headers (shopify-shop-domain for X-Shopify-Shop-Domain and back, in any
// case), or "" for any other name.
func shopifyTwin(name string) string {
	legacy := false
	rest, ok := cutPrefixFold(name, "x-shopify-")
	if ok {
		legacy = true
	} else if rest, ok = cutPrefixFold(name, "shopify-"); !ok {
		return ""
	}
	for _, t := range shopifyTwins {
		if strings.EqualFold(rest, t) {
			if legacy {
				return "shopify-" + t
			}
			return "x-shopify-" + t
		}
	}
	return ""
}

// cutPrefixFold is strings.CutPrefix ignoring ASCII case.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// shopifyHeader lets a template that names one form of a Shopify header
// read the other when only that one came.
func shopifyHeader(h Header) Header { return twinHeader{h} }

// twinHeader is a Header that falls back to a Shopify header's twin.
type twinHeader struct{ h Header }

// Get returns the value of name, else of its twin.
func (t twinHeader) Get(name string) string {
	if v := t.h.Get(name); v != "" {
		return v
	}
	if twin := shopifyTwin(name); twin != "" {
		return t.h.Get(twin)
	}
	return ""
}
