package upstream_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"hookbox/app"
)

// fakeShopify answers the GraphQL Admin API as Shopify documents it
// (https://shopify.dev/docs/api/admin-graphql: webhookSubscriptions, a
// connection paged by first/after with pageInfo; webhookSubscriptionCreate
// with userErrors; errors with extensions.code, 200 as GraphQL answers),
// at /admin/api/{version}/graphql.json with X-Shopify-Access-Token.
type fakeShopify struct {
	*httptest.Server
	mu       sync.Mutex
	subs     []map[string]string // id, topic, uri
	created  []string
	throttle bool
	refuse   map[string]string // topic → a userError's message
}

const shopToken = "shpat_0123456789abcdef0123456789abcdef"

func newFakeShopify(t *testing.T) *fakeShopify {
	f := &fakeShopify{refuse: map[string]string{}}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("X-Shopify-Access-Token") != shopToken {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}`)
			return
		}
		if r.Method != http.MethodPost || r.URL.Path != "/admin/api/2026-10/graphql.json" || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(404)
			fmt.Fprint(w, `{"errors":"Not Found"}`)
			return
		}
		if f.throttle {
			fmt.Fprint(w, `{"errors":[{"message":"Throttled","extensions":{"code":"THROTTLED","documentation":"https://shopify.dev/api/usage/rate-limits"}}]}`)
			return
		}
		var req struct {
			Query     string         `json:"query"`
			Variables map[string]any `json:"variables"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		switch {
		case strings.Contains(req.Query, "webhookSubscriptionCreate("):
			topic, _ := req.Variables["topic"].(string)
			uri, _ := req.Variables["uri"].(string)
			if msg := f.refuse[topic]; msg != "" {
				fmt.Fprintf(w, `{"data":{"webhookSubscriptionCreate":{"webhookSubscription":null,"userErrors":[{"field":["webhookSubscription","uri"],"message":%q}]}}}`, msg)
				return
			}
			id := fmt.Sprintf("gid://shopify/WebhookSubscription/%d", 9000+len(f.subs))
			f.subs = append(f.subs, map[string]string{"id": id, "topic": topic, "uri": uri})
			f.created = append(f.created, topic)
			json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"webhookSubscriptionCreate": map[string]any{
				"webhookSubscription": map[string]string{"id": id, "topic": topic, "uri": uri}, "userErrors": []any{}}}})
		case strings.Contains(req.Query, "webhookSubscriptions("):
			start := 0
			if a, ok := req.Variables["after"].(string); ok {
				start, _ = strconv.Atoi(strings.TrimPrefix(a, "cursor-"))
			}
			end := min(start+100, len(f.subs)) // first: 100
			var edges []map[string]any
			for _, s := range f.subs[start:end] {
				edges = append(edges, map[string]any{"node": s})
			}
			json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"webhookSubscriptions": map[string]any{
				"edges": edges, "pageInfo": map[string]any{"hasNextPage": end < len(f.subs), "endCursor": "cursor-" + strconv.Itoa(end)}}}})
		default:
			fmt.Fprint(w, `{"errors":[{"message":"Field 'x' doesn't exist on type 'QueryRoot'","extensions":{"code":"undefinedField"}}]}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func shopifySource(apiURL string) string {
	return fmt.Sprintf(`
[server]
public_url = "https://hooks.example"

[[source]]
name = "shop"
provider = "shopify"
secret = "shpss_appsecret"

[source.upstream]
api_key = %q
api_url = %q
topics = ["ORDERS_CREATE", "ORDERS_UPDATED", "CUSTOMERS_CREATE"]

[[route]]
to = ["erp"]
source = "shop"
`, shopToken, apiURL)
}

// A Shopify shop missing subscriptions (deleted after failed deliveries;
// one pointing elsewhere): a check, after paging through the app's many
// subscriptions, subscribes each missing topic to the source's URL again
// and alerts once; the next check finds them all and does nothing.
// GraphQL's refusals (a throttle, a userError) are shown.
func TestChecker_Shopify(t *testing.T) {
	shop := newFakeShopify(t)
	for i := range 150 { // two pages of 100: other apps' shops, other URLs
		shop.subs = append(shop.subs, map[string]string{"id": fmt.Sprint(i), "topic": "PRODUCTS_UPDATE", "uri": fmt.Sprintf("https://other.example/%d", i)})
	}
	shop.subs = append(shop.subs,
		map[string]string{"id": "a", "topic": "ORDERS_UPDATED", "uri": "https://hooks.example/in/shop"},
		map[string]string{"id": "b", "topic": "CUSTOMERS_CREATE", "uri": "https://old-box.example/in/shop"})
	r := newRig(t, shopifySource(shop.URL))

	res := r.check("shop")
	if res.Subscription != "enabled" || !res.Repaired || res.Seen != 152 || res.Error != "" {
		t.Errorf("check = %+v; want the missing ones made again", res)
	}
	if got := strings.Join(shop.created, ","); got != "ORDERS_CREATE,CUSTOMERS_CREATE" {
		t.Errorf("created %s; want ORDERS_CREATE,CUSTOMERS_CREATE", got)
	}
	if len(r.alerts) != 1 || r.alerts[0].Kind != app.AlertSubscriptionDisabled || !strings.Contains(r.alerts[0].Text, "Shopify subscription of ORDERS_CREATE, CUSTOMERS_CREATE to https://hooks.example/in/shop of source shop is gone") ||
		!strings.Contains(r.alerts[0].Text, "hookbox subscribed again.") {
		t.Errorf("alerts = %+v", r.alerts)
	}
	again := r.check("shop")
	if again.Subscription != "enabled" || again.Repaired || len(shop.created) != 2 || len(r.alerts) != 1 {
		t.Errorf("second check = %+v, created %v; want nothing to do", again, shop.created)
	}

	shop.subs = shop.subs[:150]
	shop.created = nil
	shop.refuse["CUSTOMERS_CREATE"] = "Address for this topic has already been taken"
	res = r.check("shop")
	if !strings.Contains(res.Error, "webhookSubscriptionCreate CUSTOMERS_CREATE: Shopify refused it: Address for this topic has already been taken") ||
		res.Repaired || res.Subscription != "disabled" || len(shop.created) != 2 {
		t.Errorf("check with a userError = %+v, created %v", res, shop.created)
	}
	shop.throttle = true
	if res := r.check("shop"); !strings.Contains(res.Error, "Shopify's rate limit (THROTTLED)") || strings.Contains(res.Error, shopToken) {
		t.Errorf("throttled check = %+v", res)
	}
}
