package cli_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// shopTopicHeaders are the headers Shopify sends with an event of topic
// and id, signed with secret.
func shopTopicHeaders(body []byte, secret, topic, id string) map[string]string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return map[string]string{
		"Content-Type":          "application/json",
		"X-Shopify-Topic":       topic,
		"X-Shopify-Event-Id":    id,
		"X-Shopify-Webhook-Id":  id + "-w",
		"X-Shopify-Shop-Domain": "a.myshopify.com",
		"X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(m.Sum(nil)),
	}
}

// rulesConfig is the config of the routing-rules test: paid orders of 100
// or more go to the ERP (and orders of a.com customers, by a filter that
// errors on an order without a customer), refunds go to Slack as a
// readable message made by transform.
func rulesConfig(erp, slack, transform string) string {
	return fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[source]]
name = "shop"
provider = "shopify"
secret_env = "E2E_GH_SECRET"

[[destination]]
name = "erp"
url = %q
timeout = "2s"
retry = ["10ms"]

[[destination]]
name = "slack"
url = %q
timeout = "2s"
retry = ["10ms"]
secret = %q
forward_signatures = true

[[route]]
name = "paid-erp"
source = "shop"
topics = ["orders/*"]
filter = 'body.financial_status == "paid" && double(body.total_price) >= 100.0'
to = ["erp"]

[[route]]
name = "a-customers"
source = "shop"
topics = ["orders/*"]
filter = 'body.customer.email.endsWith("@a.com")'
to = ["erp"]

[[route]]
name = "refund-slack"
source = "shop"
topics = ["refunds/create"]
transform = '%s'
to = ["slack"]
`, erp, slack, outboundSecret, transform)
}

// Routing rules end to end, on both stores: a filter that passes, one that
// blocks, one that errors (counted, the event unrouted, the sender
// answered 200); a transform to a Slack-shaped body whose Standard
// Webhooks signature verifies and which carries no X-Shopify-Hmac-Sha256;
// a transform that fails goes dead with its reason and, replayed after the
// config is fixed and the server restarted, is delivered.
func TestEndToEnd_RoutingRules(t *testing.T) { eachStore(t, testRoutingRules) }

func testRoutingRules(t *testing.T, st storeCase) {
	erp, slack := newHeaderSink(t), newHeaderSink(t)
	dir := t.TempDir()
	broken := `{"text": "Refund " + string(body.id) + ": " + body.amount + " " + body.currency}`
	config := writeConfig(t, dir, rulesConfig(erp.url, slack.url, broken), st.config(2*time.Second))
	p := start(t, config)

	send := func(topic, id, body string) {
		t.Helper()
		b := []byte(body)
		if r := post(t, p.addr, "shop", b, shopTopicHeaders(b, e2eSecret, topic, id)); r.code != 200 || r.body["status"] != "accepted" {
			t.Fatalf("post %s: %d %v", id, r.code, r.body)
		}
	}
	// Passes paid-erp (and errors on a-customers: no customer).
	send("orders/create", "o-paid", `{"id": 1, "financial_status": "paid", "total_price": "150.00"}`)
	got := erp.nextOf(t, "paid order", "o-paid")
	if !strings.Contains(string(got.body), `"o-paid"`) && !strings.Contains(string(got.body), `"total_price"`) {
		t.Errorf("erp got %q", got.body)
	}
	// Blocked by paid-erp (pending), errors on a-customers: unrouted, answered 200.
	send("orders/create", "o-pending", `{"id": 2, "financial_status": "pending", "total_price": "50.00"}`)
	// A refund, transformed for Slack.
	send("refunds/create", "r-ok", `{"id": 99, "amount": "12.50", "currency": "EUR"}`)
	msg := slack.nextOf(t, "refund", "r-ok")
	if string(msg.body) != `{"text":"Refund 99: 12.50 EUR"}` {
		t.Errorf("slack got %q", msg.body)
	}
	if ct := msg.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("slack Content-Type %q", ct)
	}
	if h := msg.header.Get("X-Shopify-Hmac-Sha256"); h != "" {
		t.Errorf("a transformed delivery carries the provider's signature %q", h)
	}
	if err := verifyStandard(msg.header, msg.body, "webhook-"); err != nil {
		t.Errorf("Standard Webhooks signature over the transformed body: %v", err)
	}
	// A refund without an amount: the transform fails, the delivery is dead.
	send("refunds/create", "r-bad", `{"id": 100, "currency": "EUR"}`)

	var dead struct {
		Items []struct {
			ID        uint64 `json:"id"`
			LastError string `json:"last_error"`
		} `json:"items"`
	}
	apptest.Within(15*time.Second, func() bool {
		apiJSON(t, p.addr, "/api/v1/dead-letters", &dead)
		return len(dead.Items) > 0
	})
	if len(dead.Items) != 1 || !strings.Contains(dead.Items[0].LastError, "transform") || !strings.Contains(dead.Items[0].LastError, "amount") {
		t.Fatalf("dead letters: %+v, want the refund without an amount, dead by its transform", dead.Items)
	}

	// The unrouted event says why; the erroring filter is counted.
	var pending struct {
		Items []struct {
			Seq    uint64 `json:"seq"`
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"items"`
	}
	apiJSON(t, p.addr, "/api/v1/events?status=unrouted", &pending)
	if len(pending.Items) != 1 || pending.Items[0].ID != "o-pending" {
		t.Fatalf("unrouted events: %+v, want o-pending alone", pending.Items)
	}
	var ev map[string]any
	apiJSON(t, p.addr, fmt.Sprintf("/api/v1/events/%d", pending.Items[0].Seq), &ev)
	raw, _ := json.Marshal(ev)
	for _, want := range []string{"paid-erp", "a-customers"} {
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("the unrouted event's JSON does not name route %s: %s", want, raw)
		}
	}
	var stats map[string]any
	apiJSON(t, p.addr, "/api/v1/stats", &stats)
	if n := routeCount(stats, "a-customers", "filter_errors"); n != 2 {
		t.Errorf("a-customers filter_errors = %v, want 2 (both orders lack a customer)", n)
	}
	if n := routeCount(stats, "paid-erp", "filter_errors"); n != 0 {
		t.Errorf("paid-erp filter_errors = %v, want 0", n)
	}
	p.stop(t)

	// Fix the transform, restart, replay: delivered with the fixed one.
	fixed := `{"text": "Refund " + string(body.id) + ": " + (has(body.amount) ? body.amount : "?") + " " + body.currency}`
	writeConfig(t, dir, rulesConfig(erp.url, slack.url, fixed), st.config(2*time.Second))
	p = start(t, config)
	if code, out := apiPost(t, p.addr, fmt.Sprintf("/api/v1/deliveries/%d/replay", dead.Items[0].ID)); code != 200 {
		t.Fatalf("replay: %d %s", code, out)
	}
	msg = slack.nextOf(t, "replayed refund", "r-bad")
	if string(msg.body) != `{"text":"Refund 100: ? EUR"}` {
		t.Errorf("replayed refund body %q", msg.body)
	}
	if err := verifyStandard(msg.header, msg.body, "webhook-"); err != nil {
		t.Errorf("replayed refund signature: %v", err)
	}
	p.stop(t)
}

// routeCount is the count named kind of route in /api/v1/stats' routes.
func routeCount(stats map[string]any, route, kind string) float64 {
	routes, _ := stats["routes"].([]any)
	for _, r := range routes {
		m, _ := r.(map[string]any)
		if m["name"] == route {
			n, _ := m[kind].(float64)
			return n
		}
	}
	return -1
}

// apiPost POSTs to path of the API of the hookbox at addr with the test
// login, and returns the status and body.
func apiPost(t *testing.T, addr, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, nil)
	req.Header.Set("Authorization", outboundAuth)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}
