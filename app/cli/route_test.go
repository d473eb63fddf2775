package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const routeTestConfig = `[[source]]
name = "shop"
provider = "shopify"
secret = "x"
[[destination]]
name = "erp"
url = "https://erp.example.com"
[[destination]]
name = "slack"
url = "https://hooks.slack.example.com/x"
[[destination]]
name = "agency-a"
url = "https://a.example.com"
[[route]]
name = "paid-to-erp"
source = "shop"
topics = ["orders/*"]
to = ["erp"]
filter = 'body.financial_status == "paid" && double(body.total_price) >= 100.0'
order_key = "{body.customer.id}"
[[route]]
name = "shop-a"
source = "shop"
to = ["agency-a", "erp"]
filter = 'headers["x-shopify-shop-domain"] == "a.myshopify.com"'
key = "{header.X-Shopify-Shop-Domain}:{body.id}"
debounce = "10s"
[[route]]
name = "refunds"
source = "shop"
topics = ["refunds/create"]
to = ["slack"]
transform = '{"text": "Refund " + string(body.id)}'
[[route]]
name = "broken"
source = "shop"
to = ["slack"]
filter = 'body.amount > 1'
[[route]]
name = "bad-transform"
source = "shop"
to = ["slack"]
transform = '{"text": body.refund.note}'
`

func TestRouteTest(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(config, []byte(routeTestConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	body := filepath.Join(dir, "order.json")
	if err := os.WriteFile(body, []byte(`{"id": 820982911946154508, "financial_status": "paid", "total_price": "199.00", "customer": {"id": 115310627314723954}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		code, out := runCmd("route", "test", "-config", config, "-source", "shop", "-topic", "orders/paid",
			"-header", "X-Shopify-Shop-Domain: a.myshopify.com", body)
		if code != 0 {
			t.Fatalf("route test: %d\n%s", code, out)
		}
		for _, want := range []string{
			"route paid-to-erp\n  taken: the filter is true\n  to: erp\n  debounce key: none (delivered at once)\n  order key: \"115310627314723954\"\n  body: as received",
			"route shop-a\n  taken: the filter is true\n  to: agency-a, erp\n  debounce key: \"a.myshopify.com:820982911946154508\"",
			"route refunds\n  not taken: topic \"orders/paid\" matches none of refunds/create",
			"route broken\n  not taken: the filter failed (hookbox counts it in filter_errors): no such key: amount",
			"route bad-transform\n  taken\n", "body: none, the delivery would go dead: transform: no such key: refund",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("TransformFromStdin", func(t *testing.T) {
		refund := filepath.Join(dir, "refund.json")
		os.WriteFile(refund, []byte(`{"id": 77, "financial_status": "refunded", "total_price": "5.00"}`), 0o600)
		f, err := os.Open(refund)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		old := stdin
		stdin = f
		t.Cleanup(func() { stdin = old })
		code, out := runCmd("route", "test", "-config", config, "-source", "shop", "-topic", "refunds/create", "-")
		if code != 0 {
			t.Fatalf("route test: %d\n%s", code, out)
		}
		for _, want := range []string{
			"route paid-to-erp\n  not taken: topic",
			"route shop-a\n  not taken: the filter failed (hookbox counts it in filter_errors): no such key: x-shopify-shop-domain",
			"route refunds\n  taken\n  to: slack\n", "body (application/json, 20 bytes):\n    {\"text\":\"Refund 77\"}",
			"route bad-transform\n  taken\n  to: slack (already sent by route refunds: once per event)\n  debounce key: none (delivered at once)\n  order key: none (no order kept)\n  body: that of the earlier routes",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("TopicFromHeader", func(t *testing.T) {
		code, out := runCmd("route", "test", "-config", config, "-source", "shop", "-header", "X-Shopify-Topic: refunds/create", body)
		if code != 0 || !strings.Contains(out, `topic "refunds/create"`) || !strings.Contains(out, "route refunds\n  taken") {
			t.Fatalf("route test: %d\n%s", code, out)
		}
	})
	t.Run("ErrBadConfig", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.toml")
		os.WriteFile(bad, []byte(strings.Replace(routeTestConfig, `body.amount > 1`, `body.amount >`, 1)), 0o600)
		code, out := runCmd("route", "test", "-config", bad, "-source", "shop", body)
		if code != 1 || !strings.Contains(out, bad+":") || !strings.Contains(out, ": route[3] (broken).filter: 1:14: Syntax error") {
			t.Fatalf("route test: %d\n%s", code, out)
		}
		// check says the same.
		if code, out2 := runCmd("check", "-config", bad); code != 1 || !strings.Contains(out2, "route[3] (broken).filter: 1:14: Syntax error") {
			t.Fatalf("check: %d\n%s", code, out2)
		}
	})
	t.Run("ErrUsage", func(t *testing.T) {
		if code, out := runCmd("route", "test", "-config", config, body); code != 2 || !strings.Contains(out, "give -source NAME") {
			t.Fatalf("no -source: %d\n%s", code, out)
		}
		if code, out := runCmd("route", "list"); code != 2 || !strings.Contains(out, "the one subcommand is test") {
			t.Fatalf("route list: %d\n%s", code, out)
		}
		if code, out := runCmd("route", "test", "-config", config, "-source", "nope", body); code != 1 || !strings.Contains(out, `no [[source]] named "nope" (it has: shop)`) {
			t.Fatalf("unknown source: %d\n%s", code, out)
		}
		if code, out := runCmd("route", "test", "-config", config, "-source", "shop", "-header", "no colon", body); code != 2 || !strings.Contains(out, "is not 'Name: value'") {
			t.Fatalf("bad header: %d\n%s", code, out)
		}
		if code, out := runCmd("route", "-h"); code != 0 || !strings.Contains(out, "Usage: hookbox route test") {
			t.Fatalf("route -h: %d\n%s", code, out)
		}
	})
}
