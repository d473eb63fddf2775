package provider_test

import (
	"encoding/base64"
	"errors"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"hookbox/app/provider"
)

// shopifyMAC is Shopify's signature of body under secret.
func shopifyMAC(secret string, body []byte) string {
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte(secret)}}, body, "", "", "", testNow)
	if err != nil {
		panic(err)
	}
	return h.Get("X-Shopify-Hmac-Sha256")
}

// TestShopify_HeaderForms: either form verifies alone; with both, the new
// one decides and the legacy one is not looked at, as in Shopify's library
// (@shopify/shopify-api lib/webhooks/validate.ts, detectWebhookType).
func TestShopify_HeaderForms(t *testing.T) {
	const secret = "shpss_test"
	verify := mustVerifier(t, "shopify", provider.Settings{Secrets: [][]byte{[]byte(secret)}})
	right := shopifyMAC(secret, testBody)
	wrong := shopifyMAC("another secret", testBody)
	for _, tc := range []struct {
		name        string
		legacy, new string // the HMAC headers' values, "" for absent
		want        error
	}{
		{"LegacyOnly", right, "", nil},
		{"NewOnly", "", right, nil},
		{"Both", right, right, nil},
		{"NewRightLegacyWrong", wrong, right, nil},
		{"NewRightLegacyMalformed", "not base64!", right, nil},
		{"ErrBadSignature/NewWrongLegacyRight", right, wrong, provider.ErrBadSignature},
		{"ErrMalformed/NewMalformedLegacyRight", right, "not base64!", provider.ErrMalformed},
		{"ErrBadSignature/NewOnlyWrong", "", wrong, provider.ErrBadSignature},
		{"ErrMissingSignature", "", "", provider.ErrMissingSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			setOrDel(h, "X-Shopify-Hmac-Sha256", tc.legacy)
			setOrDel(h, "shopify-hmac-sha256", tc.new)
			h.Set("shopify-webhook-id", "wh-1")
			got, err := verify(provider.Request{Body: testBody, Header: h}, testNow)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if tc.want == nil && got.ID != "wh-1" {
				t.Errorf("ID = %q, want wh-1", got.ID)
			}
		})
	}
	t.Run("NewEmptyLegacyRight", func(t *testing.T) {
		// An empty new header is absent to Shopify's library (a falsy string), so the legacy one counts.
		h := http.Header{"X-Shopify-Hmac-Sha256": {right}, "Shopify-Hmac-Sha256": {""}, "X-Shopify-Webhook-Id": {"wh-1"}}
		if _, err := verify(provider.Request{Body: testBody, Header: h}, testNow); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("AnyCase", func(t *testing.T) {
		// Header names are case-insensitive; a Fiber or proxy may pass them in any case.
		h := caseHeader{"SHOPIFY-HMAC-SHA256": right, "shopify-EVENT-id": "ev-1", "Shopify-Topic": "orders/paid"}
		got, err := verify(provider.Request{Body: testBody, Header: h}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if want := (provider.Verdict{ID: "ev-1", Topic: "orders/paid"}); got != want {
			t.Errorf("verdict = %+v, want %+v", got, want)
		}
	})
}

// caseHeader is a Header that matches names without regard to case, like
// hookbox's Fiber adapter, over names in whatever case they came.
type caseHeader map[string]string

func (c caseHeader) Get(name string) string {
	for k, v := range c {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// TestShopify_IDAndTopic: the event id is the first of shopify-event-id,
// shopify-webhook-id, X-Shopify-Event-Id, X-Shopify-Webhook-Id; the topic
// shopify-topic, else X-Shopify-Topic.
func TestShopify_IDAndTopic(t *testing.T) {
	const secret = "k"
	verify := mustVerifier(t, "shopify", provider.Settings{Secrets: [][]byte{[]byte(secret)}})
	mac := shopifyMAC(secret, testBody)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    provider.Verdict
	}{
		{"AllFour", map[string]string{"shopify-event-id": "a", "shopify-webhook-id": "b", "X-Shopify-Event-Id": "c", "X-Shopify-Webhook-Id": "d"}, provider.Verdict{ID: "a"}},
		{"NoNewEventID", map[string]string{"shopify-webhook-id": "b", "X-Shopify-Event-Id": "c", "X-Shopify-Webhook-Id": "d"}, provider.Verdict{ID: "b"}},
		{"LegacyOnly", map[string]string{"X-Shopify-Event-Id": "c", "X-Shopify-Webhook-Id": "d"}, provider.Verdict{ID: "c"}},
		{"LegacyWebhookID", map[string]string{"X-Shopify-Webhook-Id": "d"}, provider.Verdict{ID: "d"}},
		{"NewEventIDOverLegacy", map[string]string{"shopify-event-id": "a", "X-Shopify-Webhook-Id": "d"}, provider.Verdict{ID: "a"}},
		{"None", map[string]string{}, provider.Verdict{}},
		{"TopicNew", map[string]string{"shopify-topic": "orders/paid", "X-Shopify-Topic": "orders/create"}, provider.Verdict{Topic: "orders/paid"}},
		{"TopicLegacy", map[string]string{"X-Shopify-Topic": "orders/create"}, provider.Verdict{Topic: "orders/create"}},
		{"TopicNewEmpty", map[string]string{"shopify-topic": "", "X-Shopify-Topic": "orders/create"}, provider.Verdict{Topic: "orders/create"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			h.Set("shopify-hmac-sha256", mac)
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			got, err := verify(provider.Request{Body: testBody, Header: h}, testNow)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("verdict = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestShopify_VectorNewForm: the official vector's signature verifies
// under the new header name too, and only the body decides.
func TestShopify_VectorNewForm(t *testing.T) {
	for _, v := range MustLoadVectors(t) {
		if v.Platform != "shopify" {
			continue
		}
		verify := mustVerifier(t, "shopify", provider.Settings{Secrets: [][]byte{[]byte(v.Secret)}})
		h := http.Header{}
		h.Set("shopify-hmac-sha256", v.HeaderValue)
		h.Set("shopify-topic", "products/create")
		h.Set("shopify-webhook-id", "123456789")
		got, err := verify(provider.Request{Body: []byte(v.Body), Header: h}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if want := (provider.Verdict{ID: "123456789", Topic: "products/create"}); got != want {
			t.Errorf("verdict = %+v, want %+v", got, want)
		}
		if _, err := verify(provider.Request{Body: []byte(v.Body + " "), Header: h}, testNow); !errors.Is(err, provider.ErrBadSignature) {
			t.Errorf("a changed body: err = %v", err)
		}
	}
}

// TestShopify_Sign: the headers Shopify sends, in each form; what
// Shopify's library requires is there (it refused Sign's request while
// Shop-Domain and API-Version were missing).
func TestShopify_Sign(t *testing.T) {
	s := provider.Settings{Secrets: [][]byte{[]byte("k")}}
	at := time.Date(2026, 12, 1, 19, 30, 0, 123_456_789, time.UTC)
	legacy := []string{"X-Shopify-Api-Version", "X-Shopify-Event-Id", "X-Shopify-Hmac-Sha256", "X-Shopify-Shop-Domain", "X-Shopify-Topic", "X-Shopify-Triggered-At", "X-Shopify-Webhook-Id"}
	var modern []string
	for _, n := range legacy {
		modern = append(modern, strings.TrimPrefix(n, "X-"))
	}
	for _, tc := range []struct {
		form string
		want []string
	}{
		{"", legacy},
		{provider.ShopifyLegacy, legacy},
		{provider.ShopifyNew, modern},
		{provider.ShopifyBoth, append(append([]string(nil), legacy...), modern...)},
	} {
		t.Run("Form="+tc.form, func(t *testing.T) {
			h, err := provider.SignWith("shopify", s, testBody, "", "ev-1", "orders/create", at, provider.SignOptions{ShopifyHeaders: tc.form})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for k := range h {
				if k != "Content-Type" {
					got = append(got, k)
				}
			}
			sort.Strings(got)
			want := append([]string(nil), tc.want...)
			sort.Strings(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("headers = %v, want %v", got, want)
			}
			for _, n := range tc.want {
				want := map[string]string{
					"Api-Version": provider.ShopifyAPIVersion, "Event-Id": "ev-1", "Webhook-Id": "ev-1",
					"Shop-Domain": provider.ShopifyShopDomain, "Topic": "orders/create", "Triggered-At": "2026-12-01T19:30:00.123456789Z",
					"Hmac-Sha256": base64.StdEncoding.EncodeToString(mustMAC(t, "k", testBody)),
				}[strings.TrimPrefix(strings.TrimPrefix(n, "X-"), "Shopify-")]
				if got := h.Get(n); got != want {
					t.Errorf("%s = %q, want %q", n, got, want)
				}
			}
			got2, err := mustVerifier(t, "shopify", s)(provider.Request{Body: testBody, Header: h}, at)
			if err != nil {
				t.Fatal(err)
			}
			if want := (provider.Verdict{ID: "ev-1", Topic: "orders/create"}); got2 != want {
				t.Errorf("verdict = %+v, want %+v", got2, want)
			}
		})
	}
	t.Run("ErrUnknownForm", func(t *testing.T) {
		_, err := provider.SignWith("shopify", s, testBody, "", "ev-1", "", at, provider.SignOptions{ShopifyHeaders: "lowercase"})
		if err == nil || !strings.Contains(err.Error(), `"lowercase"`) || !strings.Contains(err.Error(), "legacy, new, both") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("OtherProvidersIgnoreIt", func(t *testing.T) {
		if _, err := provider.SignWith("github", s, testBody, "", "ev-1", "push", at, provider.SignOptions{ShopifyHeaders: provider.ShopifyNew}); err != nil {
			t.Error(err)
		}
	})
}

// mustMAC is HMAC-SHA256 of body under key, through the package's own signer.
func mustMAC(tb testing.TB, key string, body []byte) []byte {
	tb.Helper()
	b, err := base64.StdEncoding.DecodeString(shopifyMAC(key, body))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// TestHeaders: a template that names one form of a Shopify header reads
// the other when only that one came; other names and providers are as is.
func TestHeaders(t *testing.T) {
	h := http.Header{}
	h.Set("shopify-shop-domain", "new.myshopify.com")
	h.Set("X-Shopify-Topic", "orders/create")
	h.Set("X-Shopify-Api-Version", "2026-10")
	h.Set("shopify-api-version", "2027-01")
	h.Set("shopify-handle", "sub")
	view := provider.Headers("shopify", h)
	for _, tc := range []struct{ name, want string }{
		{"X-Shopify-Shop-Domain", "new.myshopify.com"},
		{"x-shopify-shop-domain", "new.myshopify.com"},
		{"shopify-shop-domain", "new.myshopify.com"},
		{"Shopify-Topic", "orders/create"},
		{"shopify-topic", "orders/create"},
		{"X-Shopify-API-Version", "2026-10"}, // the name asked for wins when both came
		{"shopify-api-version", "2027-01"},
		{"X-Shopify-Handle", ""}, // events-only: no twin
		{"shopify-handle", "sub"},
		{"X-Shopify-Name", ""},
		{"shopify-", ""},
		{"X-Shopify-", ""},
		{"Content-Type", ""},
	} {
		if got := view.Get(tc.name); got != tc.want {
			t.Errorf("Get(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := provider.Headers("github", h).Get("X-Shopify-Shop-Domain"); got != "" {
		t.Errorf("github: Get(X-Shopify-Shop-Domain) = %q, want none", got)
	}
	if provider.Headers("shopify", nil) != nil {
		t.Error("Headers(shopify, nil) is not nil")
	}
}
