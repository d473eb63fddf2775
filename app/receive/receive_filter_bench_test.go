package receive_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/provider"
	"hookbox/app/receive"
)

// benchRoutesConfig has a Shopify source and a GitHub one, and ten routes
// of the Shopify source's orders, each to its own destination.
func benchRoutesConfig() string {
	var b strings.Builder
	b.WriteString("[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"shop-secret\"\n")
	b.WriteString("[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"gh-secret\"\n")
	for i := range 10 {
		fmt.Fprintf(&b, "[[destination]]\nname = \"d%d\"\nurl = \"http://127.0.0.1:9/\"\n", i)
		fmt.Fprintf(&b, "[[route]]\nname = \"r%d\"\nsource = \"shop\"\ntopics = [\"orders/*\"]\nto = [\"d%d\"]\n", i, i)
	}
	return b.String()
}

// shopifyOrder is a 2 KiB Shopify order body.
func shopifyOrder() []byte {
	var b strings.Builder
	b.WriteString(`{"id": 820982911946154508, "financial_status": "paid", "total_price": "199.00", "currency": "EUR", "customer": {"id": 115310627314723954, "email": "john@example.com"}, "line_items": [`)
	for i := 0; b.Len() < 2000; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, `{"id": %d, "sku": "SKU-%04d", "quantity": 1, "price": "9.95"}`, 866550311766439020+i, i)
	}
	b.WriteString("]}")
	return []byte(b.String())
}

// BenchmarkReceive receives signed Shopify orders over the in-memory
// store: verify, identify, plan, accept. NoFilters is the receive path
// as it was before routes had filters; FiltersElsewhere has a filter on
// a route of another source (it must cost nothing); TenFilters asks a
// (trivial, Go) filter on each of the ten routes, so it measures what
// the receive path adds around the rules engine, not the engine itself.
func BenchmarkReceive(b *testing.B) {
	body := shopifyOrder()
	for _, bc := range []struct {
		name  string
		rules func(cfg *app.Config)
	}{
		{"NoFilters", func(*app.Config) {}},
		{"FiltersElsewhere", func(cfg *app.Config) {
			cfg.Routes = append(cfg.Routes, &app.Route{Name: "gh", Source: "gh", To: []string{"d0"}, Filter: contains("x")})
		}},
		{"TenFilters", func(cfg *app.Config) {
			for i, rt := range cfg.Routes {
				if i%2 == 0 {
					rt.Filter = contains(`"paid"`)
				} else {
					rt.Filter = contains(`"refunded"`)
				}
			}
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			cfg, err := config.Parse("bench.toml", benchRoutesConfig(), nil)
			if err != nil {
				b.Fatal(err)
			}
			bc.rules(cfg)
			r := receive.New(cfg, apptest.NewStore())
			r.Logger = discardLogger()
			at := time.Now()
			ins := make([]*app.Inbound, 1024)
			for i := range ins {
				h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("shop-secret")}}, body, "", fmt.Sprint("evt-", i), "orders/create", at)
				if err != nil {
					b.Fatal(err)
				}
				ins[i] = apptest.Inbound(body, h)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			i := 0
			for b.Loop() {
				in := ins[i%len(ins)]
				// A new id each time, so that every receive is an accept.
				in.Header = setHeader(in.Header, "X-Shopify-Webhook-Id", fmt.Sprint("evt-", i))
				if _, err := r.Receive(ctx, "shop", in); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// BenchmarkPlan is the routing decision alone for a 2 KiB Shopify order
// and the ten routes of benchRoutesConfig: without filters (0 allocations
// more than before filters existed), and with a filter on each route.
func BenchmarkPlan(b *testing.B) {
	body := shopifyOrder()
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("shop-secret")}}, body, "", "evt-1", "orders/create", time.Now())
	if err != nil {
		b.Fatal(err)
	}
	in := apptest.Inbound(body, h)
	for _, filtered := range []bool{false, true} {
		b.Run(map[bool]string{false: "NoFilters", true: "TenFilters"}[filtered], func(b *testing.B) {
			cfg, err := config.Parse("bench.toml", benchRoutesConfig(), nil)
			if err != nil {
				b.Fatal(err)
			}
			if filtered {
				for _, rt := range cfg.Routes {
					rt.Filter = contains(`"paid"`)
				}
			}
			r := receive.New(cfg, nil)
			b.ReportAllocs()
			for b.Loop() {
				receive.PlanOf(r, "shop", "evt-1", "orders/create", in)
			}
		})
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// setHeader sets the value of the header called name in h (adding it if
// missing), in place.
func setHeader(h []app.HeaderField, name, value string) []app.HeaderField {
	for i := range h {
		if strings.EqualFold(h[i].Name, name) {
			h[i].Value = value
			return h
		}
	}
	return append(h, app.HeaderField{Name: name, Value: value})
}
