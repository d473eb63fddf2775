package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"hookbox/app"
)

// Stripe (https://docs.stripe.com/api): the webhook endpoint
// (GET /v1/webhook_endpoints/{id}: status "enabled" or "disabled",
// enabled_events, "*" for all; POST with disabled=false enables it), and
// the events of the last 30 days (GET /v1/events, newest first, a list
// object {data, has_more} paged with starting_after). A restricted key
// with Events read and Webhook endpoints write is enough.

// stripeEndpoint is what a check reads of a webhook endpoint.
type stripeEndpoint struct {
	ID            string   `json:"id"`
	Status        string   `json:"status"`
	EnabledEvents []string `json:"enabled_events"`
	URL           string   `json:"url"`
}

// stripeEvent is what a check reads of an event; the event's JSON is
// what Stripe's webhook carries, and goes in as the body.
type stripeEvent struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Created int64  `json:"created"`
}

// stripeList is a page of GET /v1/events.
type stripeList struct {
	Object  string            `json:"object"`
	Data    []json.RawMessage `json:"data"`
	HasMore bool              `json:"has_more"`
}

func stripeAPI(c *Checker, u *app.Upstream) *api {
	return &api{client: c.Client, base: u.APIURL, key: u.APIKey, provider: "stripe", now: c.Now,
		header: func(h http.Header) { h.Set("Authorization", "Bearer "+u.APIKey) }}
}

// checkStripe checks src's webhook endpoint and takes in the events of
// the backfill window that hookbox does not hold.
func (c *Checker) checkStripe(ctx context.Context, src *app.Source, res *app.UpstreamCheck, prev *app.UpstreamCheck) error {
	u := src.Upstream
	a := stripeAPI(c, u)
	path := "/v1/webhook_endpoints/" + url.PathEscape(u.Endpoint)
	var ep stripeEndpoint
	if _, err := a.call(ctx, http.MethodGet, path, nil, "", &ep); err != nil {
		return err
	}
	res.Subscription = ep.Status
	if ep.Status == "disabled" {
		what := fmt.Sprintf("Stripe webhook endpoint %s", u.Endpoint)
		if u.Repair {
			form := url.Values{"disabled": {"false"}}.Encode()
			var after stripeEndpoint
			if _, err := a.call(ctx, http.MethodPost, path, []byte(form), "application/x-www-form-urlencoded", &after); err != nil {
				c.disabled(ctx, src, res, prev, what, "Re-enabling it failed: "+err.Error())
				return err
			}
			res.Subscription, res.Repaired = after.Status, after.Status == "enabled"
		}
		c.disabled(ctx, src, res, prev, what, "")
	}
	return c.stripeEvents(ctx, a, src, ep.EnabledEvents, res)
}

// stripeEvents pages through the events of the window, newest first, and
// takes in those the endpoint subscribes to that hookbox does not hold,
// leaving those younger than app.FetchedSettle to their webhook.
func (c *Checker) stripeEvents(ctx context.Context, a *api, src *app.Source, enabled []string, res *app.UpstreamCheck) error {
	now := c.Now()
	since := now.Add(-src.Upstream.Backfill)
	settled := now.Add(-app.FetchedSettle)
	all := slices.Contains(enabled, "*")
	after := ""
	for page := 0; ; page++ {
		if page == maxPages {
			return fmt.Errorf("GET /v1/events: more than %d pages in the window: shorten backfill", maxPages)
		}
		q := url.Values{"limit": {"100"}, "created[gte]": {strconv.FormatInt(since.Unix(), 10)}}
		if after != "" {
			q.Set("starting_after", after)
		}
		var list stripeList
		if _, err := a.call(ctx, http.MethodGet, "/v1/events?"+q.Encode(), nil, "", &list); err != nil {
			return err
		}
		for _, raw := range list.Data {
			var ev stripeEvent
			if err := json.Unmarshal(raw, &ev); err != nil || ev.ID == "" {
				return fmt.Errorf("GET /v1/events: an event without an id")
			}
			after = ev.ID
			if !all && !slices.Contains(enabled, ev.Type) {
				continue // the endpoint would not have sent it
			}
			res.Seen++
			created := time.Unix(ev.Created, 0)
			if created.After(settled) {
				res.Young++
				continue
			}
			if err := c.take(ctx, src, app.Fetched{ID: ev.ID, Topic: ev.Type, Body: raw, At: created}, res); err != nil {
				return err
			}
		}
		if !list.HasMore || len(list.Data) == 0 {
			return nil
		}
	}
}
