package upstream_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// Every failure of the provider's API is shown in the check's result (and
// kept), without the key, and tried again at the next check; a 429's
// Retry-After holds the scheduled checks until then; a redirect is not
// followed; an answer is read bounded.
func TestChecker_APIFailures(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		want   string
	}{
		{"401", func(w http.ResponseWriter) { stripeError(w, 401, "Invalid API Key provided: "+apiKey) },
			"GET /v1/webhook_endpoints/we_1: Stripe refused the API key (401): check the key api_key_env names"},
		{"403", func(w http.ResponseWriter) {
			stripeError(w, 403, "The provided key '"+apiKey+"' does not have the required permissions for this endpoint")
		}, "the API key may not do this (403): The provided key '…' does not have the required permissions"},
		{"429", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "120")
			stripeError(w, 429, "Too many requests")
		}, "Stripe's rate limit (429): not called again before "},
		{"500", func(w http.ResponseWriter) { stripeError(w, 500, "An unknown error occurred") },
			"Stripe's API failed (HTTP 500): An unknown error occurred; the next check tries again"},
		{"Redirect", func(w http.ResponseWriter) {
			w.Header().Set("Location", "http://127.0.0.1:1/elsewhere")
			w.WriteHeader(http.StatusFound)
		}, "Stripe answered a redirect (302), which hookbox does not follow: check api_url"},
		{"Huge", func(w http.ResponseWriter) {
			w.Write(bytes.Repeat([]byte(" "), 17<<20))
		}, "the answer is larger than 16 MiB"},
		{"NotJSON", func(w http.ResponseWriter) { w.Write([]byte("<html>maintenance</html>")) },
			"the answer is not the JSON expected"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stripe := newFakeStripe(t, apiKey)
			stripe.fail = func(w http.ResponseWriter) bool { tt.answer(w); return true }
			r := newRig(t, stripeSource(stripe.URL, true))
			res := r.check("pay")
			if !strings.Contains(res.Error, tt.want) || res.OK() {
				t.Errorf("error = %q; want %q", res.Error, tt.want)
			}
			if strings.Contains(res.Error, apiKey) || strings.Contains(res.Error, "Secret0key") {
				t.Errorf("the key in the error: %q", res.Error)
			}
			if len(stripe.calls) != 1 {
				t.Errorf("calls = %v; want the one that failed (no redirect followed)", stripe.calls)
			}
			if len(r.audit) != 1 || r.audit[0].Result != app.AuditFailed || strings.Contains(r.audit[0].Detail, apiKey) {
				t.Errorf("audit = %+v; want one failed entry, without the key", r.audit)
			}
			r.checker.Scheduled(ctx, "pay")
			wantCalls := 2
			if tt.name == "429" {
				wantCalls = 1 // held until Retry-After
				if res.RetryAfter == nil || !res.RetryAfter.Equal(r.now.Add(2*time.Minute)) {
					t.Errorf("retry after = %v; want %v", res.RetryAfter, r.now.Add(2*time.Minute))
				}
				r.now = r.now.Add(2 * time.Minute)
				r.checker.Scheduled(ctx, "pay")
				wantCalls = 2
			}
			if len(stripe.calls) != wantCalls {
				t.Errorf("calls after the next scheduled check = %v; want %d", stripe.calls, wantCalls)
			}
		})
	}
	t.Run("Timeout", func(t *testing.T) {
		stripe := newFakeStripe(t, apiKey)
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		stripe.fail = func(w http.ResponseWriter) bool { <-release; return true }
		r := newRig(t, stripeSource(stripe.URL, true))
		r.checker.Client.Timeout = 100 * time.Millisecond
		if res := r.check("pay"); !strings.Contains(res.Error, "GET /v1/webhook_endpoints/we_1: no answer within 100ms") {
			t.Errorf("error = %q; want a timeout", res.Error)
		}
	})
}

// One check of a source at a time, on any node: a check that finds the
// source's lock held says so and changes nothing.
func TestChecker_OneAtATime(t *testing.T) {
	stripe := newFakeStripe(t, apiKey)
	r := newRig(t, stripeSource(stripe.URL, true))
	release, ok, err := r.store.TryJobLock(ctx, "upstream/pay")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	res, err := r.checker.CheckNow(ctx, "pay", app.Who{Actor: "admin"})
	if err != nil || len(res) != 1 || !strings.Contains(res[0].Error, "a check of this source is running") || len(stripe.calls) != 0 {
		t.Errorf("check = %+v, %v, calls %v; want it refused, nothing called", res, err, stripe.calls)
	}
	release()
	if res := r.check("pay"); res.Error != "" {
		t.Errorf("check after the release = %+v", res)
	}
}
