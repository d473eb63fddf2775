package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/config"
)

const rulesBase = `[[source]]
name = "shop"
provider = "shopify"
secret = "x"
[[destination]]
name = "erp"
url = "https://erp.example.com"
`

func TestParseConfig_Rules(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", rulesBase+`[[route]]
name = "paid"
source = "shop"
to = ["erp"]
filter = 'body.financial_status == "paid" && double(body.total_price) >= 100.0'
transform = '{"text": "Order " + string(body.id)}'
order_key = "{body.customer.id}"
[[route]]
source = "shop"
to = ["erp"]
`, env(nil))
		if err != nil {
			t.Fatal(err)
		}
		r := cfg.Routes[0]
		if r.Filter == nil || r.Transform == nil || r.OrderKey == nil {
			t.Fatalf("route = %+v", r)
		}
		if got := r.Filter.String(); !strings.HasPrefix(got, `body.financial_status == "paid"`) {
			t.Errorf("filter = %q", got)
		}
		if got := r.OrderKey.String(); got != "{body.customer.id}" {
			t.Errorf("order_key = %q", got)
		}
		ok, err := r.Filter.Match(&app.RuleInput{Body: []byte(`{"financial_status": "paid", "total_price": "199.00"}`)})
		if !ok || err != nil {
			t.Errorf("Match = %v, %v", ok, err)
		}
		if r := cfg.Routes[1]; r.Filter != nil || r.Transform != nil || r.OrderKey != nil {
			t.Errorf("a route without rules has some: %+v", r)
		}
	})
	for _, tt := range []struct{ name, route, key, reason string }{
		{"FilterSyntax", "name = \"paid\"\nfilter = 'body.total >'", "route[0] (paid).filter", "1:13: Syntax error"},
		{"FilterUndeclared", "filter = 'bdy.total > 1'", "route[0].filter", "1:1: undeclared reference to 'bdy'"},
		{"FilterNotBool", "name = \"paid\"\nfilter = 'body.total'", "route[0] (paid).filter", "a filter must give a bool; this expression gives dyn"},
		{"FilterEmpty", "filter = ' '", "route[0].filter", "is empty"},
		{"TransformNotBody", "transform = '1 + 1'", "route[0].transform", "a transform must give a map or a list"},
		{"TransformSyntax", "transform = '{\"a\": }'", "route[0].transform", "1:7: Syntax error"},
		{"OrderKeyTemplate", "order_key = \"{body.}\"", "route[0].order_key", "empty path element"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("hookbox.toml", rulesBase+"[[route]]\nsource = \"shop\"\nto = [\"erp\"]\n"+tt.route+"\n", env(nil))
			var ce *app.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v, want a ConfigError", err)
			}
			if ce.File != "hookbox.toml" || ce.Key != tt.key || !strings.Contains(ce.Reason, tt.reason) {
				t.Fatalf("err = %q (key %q); want key %q and reason containing %q", err, ce.Key, tt.key, tt.reason)
			}
		})
	}
}

// The README's routing rules example loads, and its filters decide as it
// says.
func TestParseConfig_RulesReadme(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "### Routing rules")
	_, block, ok2 := strings.Cut(sec, "```toml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no toml example under ### Routing rules")
	}
	dests := ""
	for _, d := range []string{"erp", "agency-a", "slack"} {
		dests += "[[destination]]\nname = \"" + d + "\"\nurl = \"https://" + d + ".example.com\"\n"
	}
	cfg, err := config.Parse("readme.toml", "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"x\"\n"+dests+block, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	in := &app.RuleInput{Body: []byte(`{"financial_status": "paid", "total_price": "100.00", "customer": {"id": 1}}`),
		Header: []app.HeaderField{{Name: "X-Shopify-Shop-Domain", Value: "a.myshopify.com"}}}
	for i, want := range []bool{true, true} {
		if ok, err := cfg.Routes[i].Filter.Match(in); ok != want || err != nil {
			t.Errorf("route %d: Match = %v, %v", i, ok, err)
		}
	}
	body, _, err := cfg.Routes[2].Transform.Apply(&app.RuleInput{Body: []byte(`{"id": 9, "order_id": 8, "transactions": [{"amount": "5.00", "currency": "EUR"}]}`)}, 1000)
	if err != nil || string(body) != `{"text":"Refund 9 of order 8: 5.00 EUR"}` {
		t.Errorf("Slack transform = %s, %v", body, err)
	}
}

// Every rule's mistake is reported at once, each naming its route and key.
func TestParseConfig_RulesAllMistakes(t *testing.T) {
	_, err := config.Parse("hookbox.toml", rulesBase+`[[route]]
name = "a"
source = "shop"
to = ["erp"]
filter = 'bdy.x == 1'
transform = '1'
[[route]]
name = "b"
source = "nowhere"
to = ["erp"]
filter = 'body.x >'
`, env(nil))
	if err == nil {
		t.Fatal("loaded")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{ // in the order of the file
		"hookbox.toml:12: route[0] (a).filter: 1:1: undeclared reference to 'bdy'",
		"hookbox.toml:13: route[0] (a).transform: a transform must give",
		`hookbox.toml:16: route[1] (b).source: no [[source]] named "nowhere"`,
		"hookbox.toml:18: route[1] (b).filter: 1:9: Syntax error",
	}
	if len(lines) != len(want) {
		t.Fatalf("err =\n%v\nwant %d lines", err, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d = %q, want %q…", i, lines[i], w)
		}
	}
	var ce *app.ConfigError
	if !errors.As(err, &ce) || ce.Key != "route[0] (a).filter" {
		t.Fatalf("errors.As: %v", ce)
	}
}
