package receive_test

import (
	"context"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/config"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/storage/bboltstore"
)

// A route key written for Shopify's legacy headers keeps working when a
// request carries only the newer lowercase ones, and an id template may
// name either form.
func TestReceiver_ShopifyHeaderForms(t *testing.T) {
	const shopifyConfig = `
[[source]]
name = "shop"
provider = "shopify"
secret = "shop-secret"
[[source]]
name = "shop-templated"
provider = "shopify"
secret = "shop-secret"
id = "{header.X-Shopify-Shop-Domain}/{header.X-Shopify-Webhook-Id}"
[[destination]]
name = "erp"
url = "http://127.0.0.1:9/"
[[route]]
name = "per-shop"
source = "shop"
key = "{header.X-Shopify-Shop-Domain}:{body.id}"
debounce = "1h"
to = ["erp"]
`
	cfg, err := config.Parse("test.toml", shopifyConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := now0
	r := receive.New(cfg, db)
	r.Now = func() time.Time { return now }
	ctx := context.Background()
	body := []byte(`{"id": 7}`)
	send := func(t *testing.T, source, form, id, domain string) app.Result {
		t.Helper()
		h, err := provider.SignWith("shopify", provider.Settings{Secrets: [][]byte{[]byte("shop-secret")}}, body, "", id, "orders/updated", now,
			provider.SignOptions{ShopifyHeaders: form})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []string{"X-Shopify-Shop-Domain", "Shopify-Shop-Domain"} {
			if h.Get(n) != "" {
				h.Set(n, domain)
			}
		}
		res, err := r.Receive(ctx, source, apptest.Inbound(body, h))
		if err != nil || res.Outcome != app.Accepted {
			t.Fatalf("Receive = %+v, %v", res, err)
		}
		return res
	}
	pending := func(t *testing.T, want int) {
		t.Helper()
		if n, err := db.PendingCount(context.Background()); err != nil || n != want {
			t.Fatalf("pending = %d, %v; want %d", n, err, want)
		}
	}
	t.Run("RouteKey", func(t *testing.T) {
		send(t, "shop", provider.ShopifyNew, "n-1", "a.myshopify.com")
		pending(t, 1) // keyed: a pending delivery, not one sent at once
		send(t, "shop", provider.ShopifyLegacy, "l-1", "a.myshopify.com")
		pending(t, 1) // the same key in the other form merges into it
		send(t, "shop", provider.ShopifyNew, "n-2", "b.myshopify.com")
		pending(t, 2)
	})
	t.Run("IDTemplate", func(t *testing.T) {
		if res := send(t, "shop-templated", provider.ShopifyNew, "wh-9", "c.myshopify.com"); res.ID != "c.myshopify.com/wh-9" {
			t.Errorf("ID = %q", res.ID)
		}
	})
}
