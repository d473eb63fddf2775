package provider_test

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"hookbox/app/provider"
)

// fuzzTarget is one provider as the fuzzer drives it: where the fuzzed
// signature, timestamp and id go in the request.
type fuzzTarget struct {
	label, name string
	s           provider.Settings
	headers     func(sig, ts, id string) http.Header
	idInHeader  bool // the verdict's ID is the id header
}

// fuzzTargets builds the targets over secrets drawn from crypto/rand: no
// input the fuzzer (or a seed copied from the vectors) makes can know them,
// so a nil error for a fuzzed signature is always a bug.
func fuzzTargets(tb testing.TB) []fuzzTarget {
	tb.Helper()
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		tb.Fatal(err)
	}
	secret := []byte("fz_" + hex.EncodeToString(raw[:]))
	std := []byte("whsec_" + base64.StdEncoding.EncodeToString(raw[:]))
	one := func(name string) func(sig, ts, id string) http.Header {
		return func(sig, _, _ string) http.Header { return http.Header{name: {sig}} }
	}
	withID := func(sigName, idName string) func(sig, ts, id string) http.Header {
		return func(sig, _, id string) http.Header {
			return http.Header{sigName: {sig}, idName: {id}}
		}
	}
	sw := func(prefix string) func(sig, ts, id string) http.Header {
		return func(sig, ts, id string) http.Header {
			return http.Header{prefix + "-Id": {id}, prefix + "-Timestamp": {ts}, prefix + "-Signature": {sig}}
		}
	}
	sec := [][]byte{secret}
	return []fuzzTarget{
		{label: "shopify", name: "shopify", s: provider.Settings{Secrets: sec}, headers: withID("X-Shopify-Hmac-Sha256", "X-Shopify-Event-Id"), idInHeader: true},
		{label: "stripe", name: "stripe", s: provider.Settings{Secrets: sec}, headers: one("Stripe-Signature")},
		{label: "woocommerce", name: "woocommerce", s: provider.Settings{Secrets: sec}, headers: one("X-Wc-Webhook-Signature")},
		{label: "bigcommerce", name: "bigcommerce", s: provider.Settings{Secrets: sec}, headers: sw("Webhook")},
		{label: "square", name: "square", s: provider.Settings{Secrets: sec}, headers: one("X-Square-Hmacsha256-Signature")},
		{label: "paddle", name: "paddle", s: provider.Settings{Secrets: sec}, headers: one("Paddle-Signature")},
		{label: "github", name: "github", s: provider.Settings{Secrets: sec}, headers: withID("X-Hub-Signature-256", "X-Github-Delivery"), idInHeader: true},
		{label: "standard", name: "standard", s: provider.Settings{Secrets: [][]byte{std}}, headers: sw("Webhook"), idInHeader: true},
		{label: "svix", name: "standard", s: provider.Settings{Secrets: [][]byte{std}}, headers: sw("Svix"), idInHeader: true},
		{label: "hmac-hex", name: "hmac", s: provider.Settings{Secrets: sec, SignatureHeader: "X-Sig", SignaturePrefix: "sha256="}, headers: one("X-Sig")},
		{label: "hmac-base64", name: "hmac", s: provider.Settings{Secrets: sec, SignatureHeader: "X-Sig", SignatureEncoding: "base64"}, headers: one("X-Sig")},
		{label: "token", name: "token", s: provider.Settings{Secrets: sec}, headers: withID("Authorization", "Idempotency-Key"), idInHeader: true},
		// Shopify's newer lowercase form, alone and beside the legacy one.
		{label: "shopify-new", name: "shopify", s: provider.Settings{Secrets: sec}, headers: withID("Shopify-Hmac-Sha256", "Shopify-Event-Id"), idInHeader: true},
		{label: "shopify-both", name: "shopify", s: provider.Settings{Secrets: sec}, idInHeader: true,
			headers: func(sig, _, id string) http.Header {
				return http.Header{"Shopify-Hmac-Sha256": {sig}, "X-Shopify-Hmac-Sha256": {sig}, "Shopify-Webhook-Id": {id}}
			}},
	}
}

// fuzzTargetOf maps a vector's platform to the index of its fuzz target.
var fuzzTargetOf = map[string]int{
	"shopify": 0, "stripe": 1, "woocommerce": 2, "square": 4, "paddle": 5,
	"github": 6, "standard-webhooks": 7, "svix": 8,
}

// FuzzVerify feeds every provider random bodies, signature headers,
// timestamps and clocks. A verifier must never panic, must answer a fuzzed
// signature with one of the package's errors (only WooCommerce's unsigned
// ping passes), and must accept what Sign produces for the same body.
func FuzzVerify(f *testing.F) {
	for _, v := range MustLoadVectors(f) {
		ts, id, now := "", "", int64(1700000000)
		if v.Timestamp != nil {
			ts = *v.Timestamp
			now, _ = strconv.ParseInt(ts, 10, 64)
		}
		if v.ID != nil {
			id = *v.ID
		}
		i, ok := fuzzTargetOf[v.Platform]
		if !ok {
			f.Fatalf("no fuzz target for platform %q", v.Platform)
		}
		f.Add(uint8(i), []byte(v.Body), v.HeaderValue, ts, id, now)
	}
	f.Add(uint8(2), []byte("webhook_id=42"), "", "", "", int64(0))
	f.Add(uint8(3), testBody, "v1,AAAA v1a,BBBB", "-1", "msg", int64(-1))
	f.Add(uint8(11), testBody, "Bearer x", "", "", int64(1<<62))
	f.Add(uint8(9), testBody, "sha256=", "", "", int64(0))
	f.Add(uint8(12), []byte(`{"foo": "bar"}`), "B23tXN681gZ0qIWNRrgtzBE9XSDo5yaUu6wfmhu3a7g=", "", "wh", int64(0)) // the Shopify vector, new form
	f.Add(uint8(13), testBody, "", "", "wh", int64(0))

	targets := fuzzTargets(f)
	sentinels := []error{provider.ErrMissingSignature, provider.ErrMalformed, provider.ErrBadSignature, provider.ErrStaleTimestamp}
	verifiers := make([]provider.Verifier, len(targets))
	for i, tg := range targets {
		v, err := provider.New(tg.name, tg.s)
		if err != nil {
			f.Fatal(err)
		}
		verifiers[i] = v
	}

	f.Fuzz(func(t *testing.T, p uint8, body []byte, sig, ts, id string, now int64) {
		i := int(p) % len(targets)
		tg, verify := targets[i], verifiers[i]

		got, err := verify(provider.Request{Body: body, Header: tg.headers(sig, ts, id), URL: testURL}, time.Unix(now, 0))
		switch {
		case err == nil && tg.name == "woocommerce" && sig == "" && got == (provider.Verdict{Ping: true}):
			// The unsigned hook-creation ping: nothing is stored for it.
		case err == nil:
			t.Fatalf("%s: a fuzzed signature verified: %+v", tg.label, got)
		default:
			known := false
			for _, s := range sentinels {
				known = known || errors.Is(err, s)
			}
			if !known {
				t.Fatalf("%s: error %v is none of the package's", tg.label, err)
			}
		}

		// The same body, genuinely signed, verifies; one byte more does not.
		at := time.Unix(int64(uint64(now)%(1<<35)), 0)
		h, err := provider.Sign(tg.name, tg.s, body, testURL, id, "fuzz.topic", at)
		if err != nil {
			t.Fatalf("%s: Sign: %v", tg.label, err)
		}
		got, err = verify(provider.Request{Body: body, Header: h, URL: testURL}, at)
		if err != nil || got.Ping {
			t.Fatalf("%s: signed request: %+v, %v", tg.label, got, err)
		}
		if tg.idInHeader && id != "" && got.ID != id {
			t.Fatalf("%s: ID = %q, want %q", tg.label, got.ID, id)
		}
		if tg.name != "token" {
			longer := append(append([]byte(nil), body...), '\n')
			if _, err := verify(provider.Request{Body: longer, Header: h, URL: testURL}, at); !errors.Is(err, provider.ErrBadSignature) {
				t.Fatalf("%s: longer body: err = %v, want ErrBadSignature", tg.label, err)
			}
		}
	})
}
