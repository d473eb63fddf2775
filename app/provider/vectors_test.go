package provider_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/app/provider"
)

// vector is one entry of testdata/provider-vectors.json: an official test
// vector copied from a provider's documentation or SDK tests.
type vector struct {
	Platform    string  `json:"platform"`
	Source      string  `json:"source"`
	Secret      string  `json:"secret"`
	URL         *string `json:"url"`
	Timestamp   *string `json:"timestamp"`
	ID          *string `json:"id"`
	Body        string  `json:"body"`
	HeaderName  string  `json:"header_name"`
	HeaderValue string  `json:"header_value"`
	Notes       string  `json:"notes"`
}

// MustLoadVectors reads the official vectors.
func MustLoadVectors(tb testing.TB) []vector {
	tb.Helper()
	b, err := os.ReadFile("testdata/provider-vectors.json")
	if err != nil {
		tb.Fatal(err)
	}
	var vs []vector
	if err := json.Unmarshal(b, &vs); err != nil {
		tb.Fatal(err)
	}
	if len(vs) == 0 {
		tb.Fatal("no vectors")
	}
	return vs
}

// vectorProvider maps a vector's platform to the hookbox provider that checks it.
var vectorProvider = map[string]string{
	"github":            "github",
	"standard-webhooks": "standard",
	"svix":              "standard",
	"stripe":            "stripe",
	"shopify":           "shopify",
	"woocommerce":       "woocommerce",
	"square":            "square",
	"paddle":            "paddle",
}

// request turns a vector into the provider name, settings, request and the
// clock to check it at.
func (v vector) request(tb testing.TB) (string, provider.Settings, provider.Request, time.Time) {
	tb.Helper()
	name, ok := vectorProvider[v.Platform]
	if !ok {
		tb.Fatalf("vector for unknown platform %q: add it to the test", v.Platform)
	}
	h := http.Header{}
	h.Set(v.HeaderName, v.HeaderValue)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) // any time: the scheme has no timestamp
	if v.Timestamp != nil {
		ts, err := strconv.ParseInt(*v.Timestamp, 10, 64)
		if err != nil {
			tb.Fatal(err)
		}
		now = time.Unix(ts, 0)
	}
	switch v.Platform {
	case "standard-webhooks":
		h.Set("webhook-id", *v.ID)
		h.Set("webhook-timestamp", *v.Timestamp)
	case "svix":
		h.Set("svix-id", *v.ID)
		h.Set("svix-timestamp", *v.Timestamp)
	case "stripe":
		now = now.Add(100 * time.Second) // as the SDK's own test does
	case "shopify":
		// The other headers of the SDK test the vector comes from (see its notes).
		h.Set("X-Shopify-Topic", "products/create")
		h.Set("X-Shopify-Webhook-Id", "123456789")
	}
	r := provider.Request{Body: []byte(v.Body), Header: h}
	if v.URL != nil {
		r.URL = *v.URL
	}
	// WooCommerce's vector signs with an empty key: Secrets holds one empty secret.
	return name, provider.Settings{Secrets: [][]byte{[]byte(v.Secret)}}, r, now
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// TestVectors checks every official vector, and that each stops verifying
// when the body changes by one byte or the clock moves past the tolerance.
func TestVectors(t *testing.T) {
	vs := MustLoadVectors(t)
	// What each vector's data says about id and topic, by platform and order
	// of appearance; "" where the vector carries none.
	want := map[string]provider.Verdict{
		"github#1":            {},
		"standard-webhooks#1": {ID: "msg_p5jXN8AQM9LWM0D4loKWxJek"},
		"svix#1":              {ID: "msg_p5jXN8AQM9LWM0D4loKWxJek"},
		"stripe#1":            {ID: "evt_123", Topic: "customer.created"},
		"shopify#1":           {ID: "123456789", Topic: "products/create"},
		"woocommerce#1":       {ID: sha256Hex([]byte("secret"))},
		"square#1":            {ID: "ac3ac95b-f97d-458c-a6e6-18981597e05f", Topic: "webhooks.test_notification"},
		"square#2":            {},
		"square#3":            {},
		"paddle#1":            {ID: "evt_01hsdn97563968dy0szkmgjwh3", Topic: "price.created"},
		"paddle#2":            {},
		"paddle#3":            {},
	}
	seen := map[string]int{}
	for _, v := range vs {
		seen[v.Platform]++
		key := v.Platform + "#" + strconv.Itoa(seen[v.Platform])
		t.Run(key, func(t *testing.T) {
			name, s, r, now := v.request(t)
			verify, err := provider.New(name, s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := verify(r, now)
			if err != nil {
				t.Fatalf("%s: %v", v.Source, err)
			}
			w, ok := want[key]
			if !ok {
				t.Fatalf("no expectation for %s: add one", key)
			}
			if got != w {
				t.Errorf("verdict = %+v, want %+v", got, w)
			}

			t.Run("TamperedBody", func(t *testing.T) {
				r := r
				r.Body = append([]byte(nil), r.Body...)
				r.Body[len(r.Body)-1] ^= 1
				if _, err := verify(r, now); !errors.Is(err, provider.ErrBadSignature) {
					t.Errorf("err = %v, want ErrBadSignature", err)
				}
			})
			if v.Timestamp != nil {
				t.Run("Stale", func(t *testing.T) {
					for _, d := range []time.Duration{-time.Hour, time.Hour} {
						if _, err := verify(r, now.Add(d)); !errors.Is(err, provider.ErrStaleTimestamp) {
							t.Errorf("now%+v: err = %v, want ErrStaleTimestamp", d, err)
						}
					}
				})
			}
		})
	}
	for k := range want {
		p, n, _ := strings.Cut(k, "#")
		if i, _ := strconv.Atoi(n); seen[p] < i {
			t.Errorf("expected vector %s is not in the file", k)
		}
	}
}

// TestVectors_Rejected checks the variants the vectors' notes say must fail.
func TestVectors_Rejected(t *testing.T) {
	vs := MustLoadVectors(t)
	find := func(platform, prefix string) vector {
		for _, v := range vs {
			if v.Platform == platform && strings.HasPrefix(v.HeaderValue, prefix) {
				return v
			}
		}
		t.Fatalf("no %s vector with header %s…", platform, prefix)
		return vector{}
	}

	t.Run("SquareHex", func(t *testing.T) {
		// The same MAC hex-encoded, as an old square-go-sdk wrongly produced.
		v := find("square", "GF4Y")
		name, s, r, now := v.request(t)
		r.Header.(http.Header).Set(v.HeaderName, "185e1892b2601810d9f4d2186cd5c19cccea6f61e82f8456fd2eaf919f7fd8de")
		verify, _ := provider.New(name, s)
		if _, err := verify(r, now); !errors.Is(err, provider.ErrMalformed) {
			t.Errorf("err = %v, want ErrMalformed", err)
		}
	})
	t.Run("SquareWrongURL", func(t *testing.T) {
		v := find("square", "GF4Y")
		name, s, r, now := v.request(t)
		r.URL += "/"
		verify, _ := provider.New(name, s)
		if _, err := verify(r, now); !errors.Is(err, provider.ErrBadSignature) {
			t.Errorf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("StripeDecoyOnly", func(t *testing.T) {
		// The v0 entry alone: no v1 to check, so nothing proves the request.
		v := find("stripe", "t=")
		name, s, r, now := v.request(t)
		_, v0, _ := strings.Cut(v.HeaderValue, ",v0=")
		r.Header.(http.Header).Set(v.HeaderName, "t="+*v.Timestamp+",v0="+v0)
		verify, _ := provider.New(name, s)
		if _, err := verify(r, now); !errors.Is(err, provider.ErrMalformed) {
			t.Errorf("err = %v, want ErrMalformed", err)
		}
	})
	t.Run("StripeDecoyAsV1", func(t *testing.T) {
		v := find("stripe", "t=")
		name, s, r, now := v.request(t)
		_, v0, _ := strings.Cut(v.HeaderValue, ",v0=")
		r.Header.(http.Header).Set(v.HeaderName, "t="+*v.Timestamp+",v1="+v0)
		verify, _ := provider.New(name, s)
		if _, err := verify(r, now); !errors.Is(err, provider.ErrBadSignature) {
			t.Errorf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("WooCommerceOtherKey", func(t *testing.T) {
		v := find("woocommerce", "GBDo")
		name, _, r, now := v.request(t)
		verify, _ := provider.New(name, provider.Settings{Secrets: [][]byte{[]byte("secret")}})
		if _, err := verify(r, now); !errors.Is(err, provider.ErrBadSignature) {
			t.Errorf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("StandardAsBigCommerce", func(t *testing.T) {
		// BigCommerce keys with the raw secret bytes, so the whsec_ vector fails there.
		v := find("standard-webhooks", "v1,")
		_, s, r, now := v.request(t)
		verify, _ := provider.New("bigcommerce", s)
		if _, err := verify(r, now); !errors.Is(err, provider.ErrBadSignature) {
			t.Errorf("err = %v, want ErrBadSignature", err)
		}
	})
}
