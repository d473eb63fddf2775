package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"hookbox/app"
)

// Shopify (https://shopify.dev/docs/api/admin-graphql, webhookSubscriptions
// and webhookSubscriptionCreate): POST {shop}/admin/api/{version}/graphql.json
// with X-Shopify-Access-Token. Shopify deletes an app's subscription after
// repeated failed deliveries; a check lists the app's subscriptions
// (paged: first 100, after endCursor while hasNextPage) and, for each
// configured topic with none whose uri is this source's URL, creates one
// (JSON). GraphQL answers 200 with "errors" when it refuses (a throttle,
// a missing scope); a mutation's userErrors are reported. The API sees
// only the app's own subscriptions, which Shopify signs with the app's
// client secret: it must be among the source's secrets. Shopify keeps no
// list of missed events: nothing to fetch. A custom app's Admin API token
// with the read scopes of the topics (read_orders for ORDERS_CREATE).

const shopifyList = `query hookboxSubscriptions($after: String) {
  webhookSubscriptions(first: 100, after: $after) {
    edges { node { id topic uri } }
    pageInfo { hasNextPage endCursor }
  }
}`

const shopifyCreate = `mutation hookboxSubscribe($topic: WebhookSubscriptionTopic!, $uri: String!) {
  webhookSubscriptionCreate(topic: $topic, webhookSubscription: {uri: $uri, format: JSON}) {
    webhookSubscription { id topic uri }
    userErrors { field message }
  }
}`

type shopifySub struct {
	ID    string `json:"id"`
	Topic string `json:"topic"`
	URI   string `json:"uri"`
}

func shopifyAPI(c *Checker, u *app.Upstream) *api {
	return &api{client: c.Client, base: u.APIURL, key: u.APIKey, provider: "shopify", now: c.Now,
		header: func(h http.Header) { h.Set("X-Shopify-Access-Token", u.APIKey) }}
}

// graphql posts query with vars and decodes the answer's data into out;
// GraphQL's own errors (a 200 with "errors") fail it.
func graphql(ctx context.Context, a *api, version, query string, vars map[string]any, out any) error {
	body, err := json.Marshal(map[string]any{"query": query, "variables": vars})
	if err != nil {
		return err
	}
	var ans struct {
		Data   json.RawMessage `json:"data"`
		Errors []struct {
			Message    string `json:"message"`
			Extensions struct {
				Code string `json:"code"`
			} `json:"extensions"`
		} `json:"errors"`
	}
	path := "/admin/api/" + version + "/graphql.json"
	if _, err := a.call(ctx, http.MethodPost, path, body, "application/json", &ans); err != nil {
		return err
	}
	if len(ans.Errors) > 0 {
		e := ans.Errors[0]
		msg := a.scrubText(providerMessage(fmt.Appendf(nil, `{"message":%q}`, e.Message)))
		if e.Extensions.Code == "THROTTLED" {
			return &apiError{msg: fmt.Sprintf("POST %s: Shopify's rate limit (THROTTLED): the next check tries again", path)}
		}
		return fmt.Errorf("POST %s: Shopify refused the query: %s", path, msg)
	}
	if err := json.Unmarshal(ans.Data, out); err != nil {
		return fmt.Errorf("POST %s: the answer is not the JSON expected: %w", path, err)
	}
	return nil
}

// checkShopify keeps src's topics subscribed to src's URL.
func (c *Checker) checkShopify(ctx context.Context, src *app.Source, res *app.UpstreamCheck, prev *app.UpstreamCheck) error {
	u := src.Upstream
	a := shopifyAPI(c, u)
	have := map[string]bool{} // topics subscribed to src.URL
	after := any(nil)
	for page := 0; ; page++ {
		if page == maxPages {
			return fmt.Errorf("webhookSubscriptions: more than %d pages", maxPages)
		}
		var data struct {
			Subs struct {
				Edges []struct {
					Node shopifySub `json:"node"`
				} `json:"edges"`
				PageInfo struct {
					HasNextPage bool   `json:"hasNextPage"`
					EndCursor   string `json:"endCursor"`
				} `json:"pageInfo"`
			} `json:"webhookSubscriptions"`
		}
		if err := graphql(ctx, a, u.APIVersion, shopifyList, map[string]any{"after": after}, &data); err != nil {
			return err
		}
		for _, e := range data.Subs.Edges {
			res.Seen++
			if e.Node.URI == src.URL {
				have[e.Node.Topic] = true
			}
		}
		if !data.Subs.PageInfo.HasNextPage || data.Subs.PageInfo.EndCursor == "" {
			break
		}
		after = data.Subs.PageInfo.EndCursor
	}
	var missing []string
	for _, t := range u.Topics {
		if !have[t] {
			missing = append(missing, t)
		}
	}
	if len(missing) == 0 {
		res.Subscription = "enabled"
		return nil
	}
	res.Subscription = "disabled"
	what := fmt.Sprintf("Shopify subscription of %s to %s", strings.Join(missing, ", "), src.URL)
	var errs []error
	for _, t := range missing {
		var data struct {
			Create struct {
				Sub        *shopifySub `json:"webhookSubscription"`
				UserErrors []struct {
					Field   []string `json:"field"`
					Message string   `json:"message"`
				} `json:"userErrors"`
			} `json:"webhookSubscriptionCreate"`
		}
		if err := graphql(ctx, a, u.APIVersion, shopifyCreate, map[string]any{"topic": t, "uri": src.URL}, &data); err != nil {
			errs = append(errs, err)
			break
		}
		if ue := data.Create.UserErrors; len(ue) > 0 || data.Create.Sub == nil {
			msg := "no subscription made"
			if len(ue) > 0 {
				msg = providerMessage(fmt.Appendf(nil, `{"message":%q}`, ue[0].Message))
			}
			errs = append(errs, fmt.Errorf("webhookSubscriptionCreate %s: Shopify refused it: %s", t, a.scrubText(msg)))
			continue
		}
		res.Notes = append(res.Notes, fmt.Sprintf("subscribed %s to %s again", t, src.URL))
	}
	err := errors.Join(errs...)
	res.Repaired = err == nil
	if res.Repaired {
		res.Subscription = "enabled"
	}
	note := ""
	if err != nil {
		note = "Subscribing again failed: " + err.Error()
	}
	c.disabled(ctx, src, res, prev, what, note)
	return err
}
