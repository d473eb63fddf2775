package storetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// OrderBytes is the size of the bodies ShopifyOrder makes.
const OrderBytes = 2048

// ShopifyOrder returns order i as Shopify sends orders/create, padded to
// OrderBytes: its name is "#" and 1000000+i (OrderName), which no other
// order's body contains.
func ShopifyOrder(i int) []byte {
	n := 1000000 + i
	b := fmt.Appendf(nil, `{"id":%d,"admin_graphql_api_id":"gid:\/\/shopify\/Order\/%d","app_id":580111,`+
		`"browser_ip":"203.0.113.%d","buyer_accepts_marketing":false,"cancel_reason":null,"cancelled_at":null,`+
		`"checkout_id":%d,"confirmation_number":"K%07dX","confirmed":true,"contact_email":"buyer%d@example.com",`+
		`"created_at":"2026-11-29T10:%02d:%02d-05:00","currency":"USD","current_subtotal_price":"%d.%02d",`+
		`"current_total_price":"%d.%02d","email":"Buyer%d@Example.com","financial_status":"paid",`+
		`"fulfillment_status":null,"landing_site":"\/products\/mug","name":"#%d","order_number":%d,`+
		`"processed_at":"2026-11-29T10:%02d:%02d-05:00","source_name":"web","tags":"","test":false,`+
		`"total_discounts":"0.00","total_tax":"%d.%02d","total_weight":450,"updated_at":"2026-11-29T10:%02d:%02d-05:00",`+
		`"billing_address":{"first_name":"Ann","last_name":"Buyer","address1":"%d Main Street","city":"Springfield",`+
		`"province":"Oregon","country":"United States","zip":"97477","phone":"555-%04d","country_code":"US","province_code":"OR"},`+
		`"customer":{"id":%d,"email":"Buyer%d@Example.com","accepts_marketing":false,"first_name":"Ann","last_name":"Buyer",`+
		`"orders_count":%d,"state":"enabled","total_spent":"%d.%02d","verified_email":true,"currency":"USD"},`+
		`"line_items":[{"id":%d,"variant_id":%d,"title":"Ceramic Mug","quantity":%d,"sku":"MUG-%03d","vendor":"Hookbox Goods",`+
		`"product_id":%d,"requires_shipping":true,"taxable":true,"gift_card":false,"name":"Ceramic Mug - Blue",`+
		`"price":"%d.00","total_discount":"0.00","fulfillment_status":null,"grams":450}],`+
		`"shipping_lines":[{"id":%d,"title":"Standard","price":"5.00","code":"Standard","source":"shopify"}],"note":"`,
		5800000000000+i, 5800000000000+i, i%250, 3400000000000+i, i, i,
		i/60%60, i%60, 10+i%90, i%100, 15+i%90, i%100, i, n, n,
		i/60%60, i%60, i%7, i%100, i/60%60, i%60,
		100+i%900, i%10000, 7100000000000+i, i, 1+i%20, 25+i%90, i%100,
		13000000000000+i, 41000000000000+i, 1+i%3, i%1000, 7900000000000+i, 10+i%30, 4100000000000+i)
	pad := OrderBytes - len(b) - len(`"}`)
	b = append(b, strings.Repeat("gift wrap please; ", pad/18+1)[:max(pad, 0)]...)
	return append(b, `"}`...)
}

// OrderName is the order name ShopifyOrder(i) carries: a search for it
// finds that order alone.
func OrderName(i int) string { return fmt.Sprintf("#%d", 1000000+i) }

// FillOrders accepts orders 1 to n into s (64 at a time, as a burst of
// webhooks arrives), received step apart from T0, and logs how long it
// took.
func FillOrders(t *testing.T, s storage.Store, n int, step time.Duration) {
	start := time.Now()
	InParallel(t, n, func(i int) error {
		e := &app.Event{Source: "shop", ID: fmt.Sprintf("wh-%d", i), Topic: "orders/create", ReceivedAt: T0.Add(time.Duration(i) * step),
			Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Shopify-Topic", Value: "orders/create"}},
			Body:   ShopifyOrder(i)}
		_, err := s.Accept(context.Background(), e, e.ReceivedAt.Add(720*time.Hour), nil)
		return err
	})
	took := time.Since(start)
	t.Logf("filled %d orders of %d bytes in %v (%.0f/s)", n, OrderBytes, took.Round(time.Second), float64(n)/took.Seconds())
}
