package config_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
)

const stripeSource = "[[source]]\nname = \"pay\"\nprovider = \"stripe\"\nsecret_env = \"STRIPE_SECRET\"\n"

// [source.upstream] is read with the provider's defaults; the key comes
// from the variable api_key_env names.
func TestParseConfig_Upstream(t *testing.T) {
	set := map[string]string{"STRIPE_SECRET": "whsec_x", "STRIPE_API_KEY": "rk_test_51abc", "GH_TOKEN": "github_pat_1"}
	t.Run("StripeDefaults", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", stripeSource+"[source.upstream]\napi_key_env = \"STRIPE_API_KEY\"\nendpoint = \"we_123\"\n", env(set))
		if err != nil {
			t.Fatal(err)
		}
		got := cfg.Sources[0].Upstream
		want := &app.Upstream{APIKey: "rk_test_51abc", Endpoint: "we_123", APIURL: "https://api.stripe.com",
			Check: "@every 10m", Backfill: 72 * time.Hour}
		if got == nil || !reflect.DeepEqual(got, want) {
			t.Errorf("upstream = %+v; want %+v", got, want)
		}
	})
	t.Run("GitHubAllKeys", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", "[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"s\"\n"+
			"[source.upstream]\napi_key_env = \"GH_TOKEN\"\nendpoint = \"repos/acme/shop/hooks/42\"\napi_url = \"http://127.0.0.1:9999/\"\n"+
			"check = \"@every 1m\"\nbackfill = \"24h\"\nrepair = true\n", env(set))
		if err != nil {
			t.Fatal(err)
		}
		got := cfg.Sources[0].Upstream
		want := &app.Upstream{APIKey: "github_pat_1", Endpoint: "repos/acme/shop/hooks/42", APIURL: "http://127.0.0.1:9999",
			Check: "@every 1m", Backfill: 24 * time.Hour, Repair: true}
		if got == nil || !reflect.DeepEqual(got, want) {
			t.Errorf("upstream = %+v; want %+v", got, want)
		}
	})
	t.Run("WooCommerce", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", "[[source]]\nname = \"woo\"\nprovider = \"woocommerce\"\nsecret = \"x\"\n"+
			"[source.upstream]\napi_key = \"ck_1:cs_2\"\nendpoint = \"12\"\napi_url = \"https://shop.example/\"\n", env(set))
		if err != nil {
			t.Fatal(err)
		}
		want := &app.Upstream{APIKey: "ck_1:cs_2", Endpoint: "12", APIURL: "https://shop.example", Check: "@every 10m"}
		if got := cfg.Sources[0].Upstream; !reflect.DeepEqual(got, want) {
			t.Errorf("upstream = %+v; want %+v (no backfill)", got, want)
		}
	})
	t.Run("Shopify", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", "[server]\npublic_url = \"https://hooks.example\"\n[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"x\"\n"+
			"[source.upstream]\napi_key = \"shpat_1\"\napi_url = \"https://shop.myshopify.com\"\ntopics = [\"ORDERS_CREATE\"]\n", env(set))
		if err != nil {
			t.Fatal(err)
		}
		want := &app.Upstream{APIKey: "shpat_1", APIURL: "https://shop.myshopify.com", Topics: []string{"ORDERS_CREATE"},
			APIVersion: app.DefaultShopifyVersion, Check: "@every 10m"}
		if got := cfg.Sources[0].Upstream; !reflect.DeepEqual(got, want) {
			t.Errorf("upstream = %+v; want %+v", got, want)
		}
	})
	t.Run("NoneWithoutTheTable", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", stripeSource, env(set))
		if err != nil || cfg.Sources[0].Upstream != nil {
			t.Fatalf("upstream = %+v, %v; want none", cfg.Sources[0].Upstream, err)
		}
	})
}

// Every mistake of a [source.upstream] table is reported at once, with
// its file, line and key, and the key's value is never shown.
func TestParseConfig_UpstreamMistakes(t *testing.T) {
	set := map[string]string{"STRIPE_SECRET": "whsec_x", "STRIPE_API_KEY": "rk_test_51abc"}
	for _, tt := range []struct {
		name, toml string
		want       []string // each line of the message
	}{
		{"UnknownProvider", "[[source]]\nname = \"sq\"\nprovider = \"paddle\"\nsecret = \"x\"\n[source.upstream]\napi_key = \"sq0atp_0a1b2c3d\"\n",
			[]string{`c.toml:5: source[0] (sq).upstream: hookbox cannot check provider "paddle"'s side yet: [source.upstream] takes a source of github, shopify, stripe, woocommerce`}},
		{"ShopifyAllAtOnce", "[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"x\"\n[source.upstream]\napi_key = \"shpat_0a1b2c3d4e5f\"\napi_url = \"https://shop.myshopify.com\"\nendpoint = \"1\"\ntopics = [\"orders/create\", \"ORDERS_PAID\", \"ORDERS_PAID\"]\napi_version = \"2026-05\"\nbackfill = \"1h\"\n",
			[]string{
				"c.toml:8: source[0] (shop).upstream.endpoint: a Shopify source takes no endpoint: topics name the subscriptions to keep in place",
				`c.toml:9: source[0] (shop).upstream.topics[0]: "orders/create" is not a topic as the GraphQL Admin API names it (ORDERS_CREATE, not orders/create)`,
				"c.toml:9: source[0] (shop).upstream.topics[2]: ORDERS_PAID is named twice",
				`c.toml:10: source[0] (shop).upstream.api_version: "2026-05" is not an Admin API version (e.g. "2026-10")`,
				"c.toml:11: source[0] (shop).upstream.backfill: Shopify keeps no list of missed events: a check turns the webhook on again (repair), it cannot fetch what was missed",
				"c.toml: server.public_url: a Shopify source's [source.upstream] makes subscriptions to this server's URL: set public_url to the address Shopify posts to",
			}},
		{"WooAllAtOnce", "[[source]]\nname = \"woo\"\nprovider = \"woocommerce\"\nsecret = \"x\"\n[source.upstream]\napi_key = \"ck_0a1b2c3d4e5f\"\nendpoint = \"we_1\"\nbackfill = \"24h\"\n",
			[]string{
				"c.toml:5: source[0] (woo).upstream.api_url: is missing: the shop's address, whose API a check reads, e.g. api_url = \"https://shop.example\"",
				"c.toml:6: source[0] (woo).upstream.api_key: a WooCommerce key is the REST API key's consumer key and secret joined by a colon: ck_…:cs_…",
				`c.toml:7: source[0] (woo).upstream.endpoint: "we_1" is not the webhook's id (WooCommerce → Settings → Advanced → Webhooks), e.g. endpoint = "12"`,
				"c.toml:8: source[0] (woo).upstream.backfill: WooCommerce keeps no list of missed events: a check turns the webhook on again (repair), it cannot fetch what was missed",
			}},
		{"AllAtOnce", stripeSource + "[source.upstream]\napi_key = \"rk_live_0a1b2c3d4e5f\"\napi_key_env = \"STRIPE_API_KEY\"\nendpoint = \"123\"\n" +
			"api_url = \"http://api.stripe.com\"\ncheck = \"every ten\"\nbackfill = \"800h\"\ntopics = [\"x\"]\n",
			[]string{
				"c.toml:6: source[0] (pay).upstream.api_key: set api_key or api_key_env, not both",
				`c.toml:8: source[0] (pay).upstream.endpoint: "123" is not the webhook endpoint's id, e.g. endpoint = "we_123"`,
				`c.toml:9: source[0] (pay).upstream.api_url: "http://api.stripe.com": the API key would cross the network in clear: use https (http only to this machine)`,
				`c.toml:10: source[0] (pay).upstream.check: "every ten" is not a cron spec`,
				"c.toml:11: source[0] (pay).upstream.backfill: 800h is longer than stripe keeps what a check reads (720h)",
				"c.toml:12: source[0] (pay).upstream.topics: a stripe source takes no topics: the endpoint names what it sends",
			}},
		{"NoKey", stripeSource + "[source.upstream]\nendpoint = \"we_1\"\n",
			[]string{`c.toml:5: source[0] (pay).upstream.api_key_env: no API key: name the environment variable that holds it, api_key_env = "STRIPE_API_KEY" (or set api_key)`}},
		{"KeyInKeyEnv", stripeSource + "[source.upstream]\napi_key_env = \"rk_live_0a1b2c3d4e5f\"\nendpoint = \"we_1\"\n",
			[]string{"c.toml:6: source[0] (pay).upstream.api_key_env: holds what looks like a secret itself"}},
		{"KeyUnquoted", stripeSource + "[source.upstream]\napi_key = rk_live_0a1b2c3d4e5f\n",
			[]string{"c.toml:6: source.upstream.api_key: expected value but found … instead"}},
		{"KeyNotAString", stripeSource + "[source.upstream]\napi_key = 918273645\nendpoint = \"we_1\"\n",
			[]string{"c.toml:6: source[0] (pay).upstream.api_key: must be a string, in quotes"}},
		{"UnknownKey", stripeSource + "[source.upstream]\napi_key_env = \"STRIPE_API_KEY\"\nendpoint = \"we_1\"\nrepiar = true\n",
			[]string{"c.toml:8: source[0] (pay).upstream.repiar: unknown key; did you mean repair?"}},
		{"GitHubEndpoint", "[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"s\"\n[source.upstream]\napi_key_env = \"STRIPE_API_KEY\"\nendpoint = \"https://github.com/acme/shop/settings/hooks/1\"\n",
			[]string{`c.toml:7: source[0] (gh).upstream.endpoint: "https://github.com/acme/shop/settings/hooks/1" is not the hook's API path, e.g. endpoint = "repos/OWNER/REPO/hooks/123" or "orgs/ORG/hooks/123"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("c.toml", tt.toml, env(set))
			if err == nil {
				t.Fatal("accepted")
			}
			got := err.Error()
			lines := strings.Split(got, "\n")
			if len(lines) != len(tt.want) {
				t.Fatalf("err =\n%s\nwant %d lines:\n%s", got, len(tt.want), strings.Join(tt.want, "\n"))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("line %d = %q; want it to start %q", i, lines[i], w)
				}
			}
			for _, secret := range []string{"0a1b2c3d", "918273645", "rk_test_51abc"} {
				if strings.Contains(got, secret) {
					t.Errorf("the error shows the key %q:\n%s", secret, got)
				}
			}
		})
	}
}
