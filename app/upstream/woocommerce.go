package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"hookbox/app"
)

// WooCommerce (https://woocommerce.github.io/woocommerce-rest-api-docs/,
// Webhooks): GET /wp-json/wc/v3/webhooks/{id}, with HTTP Basic of the REST
// API key's consumer key and secret (over https; api_url "ck_…:cs_…"):
// status "active", "paused" (the merchant's choice: reported, left alone)
// or "disabled" (WooCommerce disables a webhook after 5 failed deliveries
// in a row: alerted, and with repair PUT {"status": "active"});
// delivery_url, reported when it is not this source's URL. WooCommerce
// keeps no list of missed events: there is nothing to fetch. A key with
// Read/Write permissions (Read without repair).

type wooWebhook struct {
	ID          int64  `json:"id"`
	Status      string `json:"status"`
	Topic       string `json:"topic"`
	DeliveryURL string `json:"delivery_url"`
}

func wooAPI(c *Checker, u *app.Upstream) *api {
	return &api{client: c.Client, base: u.APIURL, key: u.APIKey, provider: "woocommerce", now: c.Now,
		header: func(h http.Header) {
			ck, cs, _ := strings.Cut(u.APIKey, ":")
			r := http.Request{Header: h}
			r.SetBasicAuth(ck, cs)
		}}
}

// checkWoo checks src's WooCommerce webhook.
func (c *Checker) checkWoo(ctx context.Context, src *app.Source, res *app.UpstreamCheck, prev *app.UpstreamCheck) error {
	u := src.Upstream
	a := wooAPI(c, u)
	path := "/wp-json/wc/v3/webhooks/" + url.PathEscape(u.Endpoint)
	var wh wooWebhook
	if _, err := a.call(ctx, http.MethodGet, path, nil, "", &wh); err != nil {
		return err
	}
	switch wh.Status {
	case "active":
		res.Subscription = "enabled"
	case "paused":
		res.Subscription = "paused"
		res.Notes = append(res.Notes, "the webhook is paused in WooCommerce (the merchant's choice): hookbox leaves it so; it sends nothing until it is active")
	case "disabled":
		res.Subscription = "disabled"
		what := fmt.Sprintf("WooCommerce webhook %s (%s)", u.Endpoint, wh.Topic)
		if u.Repair {
			var after wooWebhook
			if _, err := a.call(ctx, http.MethodPut, path, []byte(`{"status":"active"}`), "application/json", &after); err != nil {
				c.disabled(ctx, src, res, prev, what, "Turning it on failed: "+err.Error())
				return err
			}
			if after.Status == "active" {
				res.Subscription, res.Repaired = "enabled", true
			}
		}
		c.disabled(ctx, src, res, prev, what, "")
	default:
		res.Subscription = wh.Status
	}
	if src.URL != "" && src.URL[0] != '/' && wh.DeliveryURL != src.URL {
		res.Notes = append(res.Notes, fmt.Sprintf("the webhook delivers to %s, not to this source's URL %s", cleanURL(wh.DeliveryURL), src.URL))
	}
	return nil
}

// cleanURL is a URL a provider gave, as a result shows it: without its
// query (which may hold a token) and bounded.
func cleanURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "an address that is not a URL"
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	out := u.String()
	if len(out) > maxMessage {
		out = out[:maxMessage] + "…"
	}
	return out
}
