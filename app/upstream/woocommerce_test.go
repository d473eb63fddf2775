package upstream_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"hookbox/app"
)

// fakeWoo answers as the WooCommerce REST API documents its webhooks
// (https://woocommerce.github.io/woocommerce-rest-api-docs/#webhooks):
// GET and PUT /wp-json/wc/v3/webhooks/{id} with HTTP Basic of the
// consumer key and secret; errors {"code", "message", "data": {"status"}}.
type fakeWoo struct {
	*httptest.Server
	mu    sync.Mutex
	hooks map[string]map[string]any
	puts  []string
}

const wooKey = "ck_0123456789abcdef:cs_fedcba9876543210"

func newFakeWoo(t *testing.T) *fakeWoo {
	f := &fakeWoo{hooks: map[string]map[string]any{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		if r.Header.Get("Authorization") != "Basic "+base64.StdEncoding.EncodeToString([]byte(wooKey)) {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"code":"woocommerce_rest_cannot_view","message":"Sorry, you cannot list resources.","data":{"status":401}}`)
			return
		}
		id, ok := strings.CutPrefix(r.URL.Path, "/wp-json/wc/v3/webhooks/")
		h := f.hooks[id]
		if !ok || h == nil {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"code":"woocommerce_rest_webhook_invalid_id","message":"Invalid ID.","data":{"status":404}}`)
			return
		}
		if r.Method == http.MethodPut {
			var body map[string]any
			if json.NewDecoder(r.Body).Decode(&body) != nil {
				w.WriteHeader(400)
				return
			}
			for k, v := range body {
				h[k] = v
			}
			f.puts = append(f.puts, id)
		}
		json.NewEncoder(w).Encode(h)
	}))
	t.Cleanup(f.Close)
	return f
}

func wooSource(name, apiURL, id string) string {
	return fmt.Sprintf(`
[[source]]
name = %q
provider = "woocommerce"
secret = "woo-secret"

[source.upstream]
api_key = %q
endpoint = %q
api_url = %q
repair = true

[[route]]
to = ["erp"]
source = %q
`, name, wooKey, id, apiURL, name)
}

// A WooCommerce webhook disabled (after failed deliveries) is turned on
// again and alerted once; one the merchant paused is reported and left
// paused; one that delivers elsewhere is reported.
func TestChecker_WooCommerce(t *testing.T) {
	woo := newFakeWoo(t)
	woo.hooks["12"] = map[string]any{"id": 12, "name": "Order created", "status": "disabled", "topic": "order.created",
		"delivery_url": "https://hooks.example/in/woo"}
	woo.hooks["13"] = map[string]any{"id": 13, "name": "Order updated", "status": "paused", "topic": "order.updated",
		"delivery_url": "https://old.example/hooks?token=abc"}
	r := newRig(t, "[server]\npublic_url = \"https://hooks.example\"\n"+wooSource("woo", woo.URL, "12")+wooSource("woo2", woo.URL, "13"))

	res := r.check("woo")
	if res.Subscription != "enabled" || !res.Repaired || res.Error != "" || len(res.Notes) != 0 || woo.hooks["12"]["status"] != "active" {
		t.Errorf("check of the disabled one = %+v; want it turned on, nothing to note", res)
	}
	if len(r.alerts) != 1 || r.alerts[0].Kind != app.AlertSubscriptionDisabled || !strings.Contains(r.alerts[0].Text, "WooCommerce webhook 12 (order.created)") {
		t.Errorf("alerts = %+v", r.alerts)
	}
	res = r.check("woo2")
	if res.Subscription != "paused" || res.Repaired || len(woo.puts) != 1 || woo.hooks["13"]["status"] != "paused" {
		t.Errorf("check of the paused one = %+v, puts %v; want it left paused", res, woo.puts)
	}
	notes := strings.Join(res.Notes, "\n")
	if !strings.Contains(notes, "paused in WooCommerce") || !strings.Contains(notes, "delivers to https://old.example/hooks, not to this source's URL https://hooks.example/in/woo2") ||
		strings.Contains(notes, "token=abc") {
		t.Errorf("notes = %q; want the pause and the other URL (without its query)", notes)
	}
	if len(r.alerts) != 1 {
		t.Errorf("a paused webhook alerted: %+v", r.alerts)
	}
	woo.hooks["12"] = nil
	if res := r.check("woo"); !strings.Contains(res.Error, "WooCommerce knows no such endpoint (404): Invalid ID.") || strings.Contains(res.Error, "cs_") {
		t.Errorf("error = %q", res.Error)
	}
}
