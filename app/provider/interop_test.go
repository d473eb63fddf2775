package provider_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"

	"hookbox/app/provider"
)

// The senders' own libraries and ours must agree in both directions.

func TestStripe_Interop(t *testing.T) {
	const secret = "whsec_test_0123456789abcdef"
	s := provider.Settings{Secrets: [][]byte{[]byte(secret)}}
	verify := mustVerifier(t, "stripe", s)

	t.Run("StripeGoSignsWeVerify", func(t *testing.T) {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: testBody, Secret: secret, Timestamp: testNow})
		h := http.Header{}
		h.Set("Stripe-Signature", sp.Header)
		got, err := verify(provider.Request{Body: sp.Payload, Header: h}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if want := (provider.Verdict{ID: testID, Topic: testTopic}); got != want {
			t.Errorf("verdict = %+v, want %+v", got, want)
		}
	})
	t.Run("StripeGoV0Refused", func(t *testing.T) {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: testBody, Secret: secret, Timestamp: testNow, Scheme: "v0"})
		h := http.Header{}
		h.Set("Stripe-Signature", sp.Header)
		if _, err := verify(provider.Request{Body: sp.Payload, Header: h}, testNow); err == nil {
			t.Error("a v0-only header verified")
		}
	})
	t.Run("WeSignStripeGoVerifies", func(t *testing.T) {
		// stripe-go reads the wall clock, so sign at the wall clock.
		h, err := provider.Sign("stripe", s, testBody, "", "", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := webhook.ValidatePayloadWithTolerance(testBody, h.Get("Stripe-Signature"), secret, webhook.DefaultTolerance); err != nil {
			t.Error(err)
		}
		if err := webhook.ValidatePayloadWithTolerance(testBody, h.Get("Stripe-Signature"), "whsec_other", webhook.DefaultTolerance); err == nil {
			t.Error("stripe-go accepted our signature under another secret")
		}
	})
}

func TestStandard_Interop(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	s := provider.Settings{Secrets: [][]byte{[]byte(secret)}}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("WeSignLibraryVerifies", func(t *testing.T) {
		// The library reads the wall clock, so sign at the wall clock.
		h, err := provider.Sign("standard", s, testBody, "", "msg_1", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(testBody, h); err != nil {
			t.Error(err)
		}
	})
	t.Run("LibrarySignsWeVerify", func(t *testing.T) {
		sig, err := wh.Sign("msg_1", testNow, testBody)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, "msg_1")
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(testNow.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)
		got, err := mustVerifier(t, "standard", s)(provider.Request{Body: testBody, Header: h}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if want := (provider.Verdict{ID: "msg_1", Topic: testTopic}); got != want {
			t.Errorf("verdict = %+v, want %+v", got, want)
		}
	})
	t.Run("BigCommerceRawKey", func(t *testing.T) {
		// BigCommerce: the same scheme keyed with the raw client secret.
		const clientSecret = "bc-client-secret"
		raw, _ := standardwebhooks.NewWebhookRaw([]byte(clientSecret))
		bs := provider.Settings{Secrets: [][]byte{[]byte(clientSecret)}}
		sig, err := raw.Sign("msg_2", testNow, testBody)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, "msg_2")
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(testNow.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)
		got, err := mustVerifier(t, "bigcommerce", bs)(provider.Request{Body: testBody, Header: h}, testNow)
		if err != nil {
			t.Fatal(err)
		}
		if want := (provider.Verdict{ID: testID, Topic: testTopic}); got != want {
			t.Errorf("verdict = %+v, want %+v", got, want)
		}
		ours, err := provider.Sign("bigcommerce", bs, testBody, "", "msg_3", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.Verify(testBody, ours); err != nil {
			t.Error(err)
		}
	})
}
