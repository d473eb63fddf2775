package rules_test

import (
	"encoding/json"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/rules"
)

// tenFilters are ten different filters a merchant might put on routes
// of one Shopify source: fields of the order, of its customer and line
// items, headers and the topic.
var tenFilters = []string{
	`body.financial_status == "paid" && double(body.total_price) >= 100.0`,
	`headers["x-shopify-shop-domain"] == "a.myshopify.com"`,
	`topic == "orders/paid"`,
	`body.currency == "EUR"`,
	`body.customer.id == 115310627314723954`,
	`"vip" in body.tags.split(", ")`,
	`body.line_items.exists(i, i.sku == "CASE-01")`,
	`has(body.shipping_address) && body.shipping_address.country_code == "DE"`,
	`!body.test && body.cancelled_at == null`,
	`string(body.id).endsWith("508")`,
}

// BenchmarkFilters10 is the cost of the ten filters on one event (a
// 2.4 KiB Shopify order), the body parsed once for all of them: ns/op is
// ns per event. On the 2-core dev machine, quiet (2026-12-02): 14.5-20 µs
// per event (18-25 µs of CPU with the collector's share), against 42-46
// µs for one encoding/json decode of the body (BenchmarkDecodeFull) and
// 1.4-2.3 µs for ten filters that read only headers and the topic. Of it
// about 3 µs is the top-level scan (BenchmarkIndex), 3-5 µs the ten
// evaluations once the fields are decoded, the rest decoding the fields
// read (the line items most) and the collector. Issue 27's target, 5 µs,
// is not met on this machine.
func BenchmarkFilters10(b *testing.B) {
	fs := make([]app.Filter, len(tenFilters))
	for i, e := range tenFilters {
		fs[i] = mustFilter(b, e)
	}
	tmpl := *shopifyInput(b)
	b.ReportAllocs()
	defer reportCPU(b, apptest.CPUTime())
	b.SetBytes(int64(len(tmpl.Body)))
	for b.Loop() {
		in := tmpl // a new event: nothing parsed yet
		for _, f := range fs {
			if ok, err := f.Match(&in); !ok || err != nil {
				b.Fatalf("%s: %v %v", f, ok, err)
			}
		}
	}
}

// BenchmarkFilters10_HeadersOnly: filters that read no body never parse it.
func BenchmarkFilters10_HeadersOnly(b *testing.B) {
	var fs []app.Filter
	for range 5 {
		fs = append(fs, mustFilter(b, tenFilters[1]), mustFilter(b, tenFilters[2]))
	}
	tmpl := *shopifyInput(b)
	b.ReportAllocs()
	defer reportCPU(b, apptest.CPUTime())
	for b.Loop() {
		in := tmpl
		for _, f := range fs {
			if ok, err := f.Match(&in); !ok || err != nil {
				b.Fatalf("%s: %v %v", f, ok, err)
			}
		}
	}
}

// BenchmarkDecodeFull is what a full encoding/json decode of the same
// body costs, for comparison with the lazy parse above.
func BenchmarkDecodeFull(b *testing.B) {
	body := shopifyOrder(b)
	b.ReportAllocs()
	defer reportCPU(b, apptest.CPUTime())
	for b.Loop() {
		var v map[string]any
		if err := json.Unmarshal(body, &v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTransform is one Slack-shaped transform per delivery.
func BenchmarkTransform(b *testing.B) {
	tr, err := rules.NewTransform(`{"text": "Refund " + string(body.id) + " for " + body.customer.first_name + ": " + body.total_price + " " + body.currency, "channel": "#refunds"}`)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := *shopifyInput(b)
	b.ReportAllocs()
	defer reportCPU(b, apptest.CPUTime())
	for b.Loop() {
		in := tmpl
		if _, _, err := tr.Apply(&in, 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU adds the CPU time per op since start (cpu-ns/op), which a
// loaded machine distorts less than ns/op.
func reportCPU(b *testing.B, start time.Duration) {
	if end := apptest.CPUTime(); end > start && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}
