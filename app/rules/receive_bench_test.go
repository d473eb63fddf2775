package rules_test

import (
	"context"
	"fmt"
	"io"
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

// receiveConfig is a Shopify source and ten routes to ten destinations,
// each route with one of tenFilters when filtered.
func receiveConfig(tb testing.TB, filtered bool) *app.Config {
	tb.Helper()
	var b strings.Builder
	b.WriteString("[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"shh\"\n")
	for i, f := range tenFilters {
		fmt.Fprintf(&b, "[[destination]]\nname = \"d%d\"\nurl = \"https://d%d.example.com\"\n", i, i)
		fmt.Fprintf(&b, "[[route]]\nsource = \"shop\"\nto = [\"d%d\"]\n", i)
		if filtered {
			fmt.Fprintf(&b, "filter = '%s'\n", f)
		}
	}
	cfg, err := config.Parse("bench.toml", b.String(), func(string) (string, bool) { return "", false })
	if err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// BenchmarkReceive_Filters is Receive of a signed 2.4 KiB Shopify order
// over ten routes with and without a filter each: the difference is what
// the filters add per event. The same id each time, so every event after
// the first is a duplicate and the store's part stays the same size (the
// plan, filters included, is made before the store answers).
func BenchmarkReceive_Filters(b *testing.B) {
	body := shopifyOrder(b)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("shh")}}, body, "", "wh-1", "orders/paid", now)
	if err != nil {
		b.Fatal(err)
	}
	in := &app.Inbound{Body: body}
	for k, vs := range h {
		in.Header = append(in.Header, app.HeaderField{Name: k, Value: vs[0]})
	}
	in.Header = append(in.Header, app.HeaderField{Name: "X-Shopify-Shop-Domain", Value: "a.myshopify.com"},
		app.HeaderField{Name: "Content-Type", Value: "application/json"})
	for _, filtered := range []bool{false, true} {
		b.Run(map[bool]string{false: "Unfiltered", true: "Filtered"}[filtered], func(b *testing.B) {
			r := receive.New(receiveConfig(b, filtered), apptest.NewStore())
			r.Now = func() time.Time { return now }
			r.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
			ctx := context.Background()
			b.ReportAllocs()
			defer reportCPU(b, apptest.CPUTime())
			for b.Loop() {
				if _, err := r.Receive(ctx, "shop", in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
