package upstream

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"hookbox/app"
)

// GitHub (https://docs.github.com/en/rest/repos/webhooks and
// .../orgs/webhooks): the hook (GET {hook}: active; PATCH {"active": true}
// turns it on again), its deliveries (GET {hook}/deliveries, newest
// first, per_page up to 100, paged by the Link header's cursor; each with
// guid (the X-GitHub-Delivery), status_code (0 when nothing answered),
// delivered_at, redelivery), and a redelivery
// (POST {hook}/deliveries/{id}/attempts, 202): GitHub sends the delivery
// again, signed, with the same X-GitHub-Delivery, and hookbox's dedup
// does the rest. A fine-grained token with the repository's Webhooks
// read and write (an organization's: Webhooks of the organization).

// githubVersion is the REST API version asked for.
const githubVersion = "2022-11-28"

// maxRedeliveries bounds the redeliveries one check asks for: GitHub
// limits the requests that create content.
const maxRedeliveries = 100

type githubHook struct {
	ID     int64 `json:"id"`
	Active bool  `json:"active"`
}

type githubDelivery struct {
	ID          int64     `json:"id"`
	GUID        string    `json:"guid"`
	DeliveredAt time.Time `json:"delivered_at"`
	Redelivery  bool      `json:"redelivery"`
	StatusCode  int       `json:"status_code"`
	Event       string    `json:"event"`
}

func githubAPI(c *Checker, u *app.Upstream) *api {
	return &api{client: c.Client, base: u.APIURL, key: u.APIKey, provider: "github", now: c.Now,
		header: func(h http.Header) {
			h.Set("Authorization", "Bearer "+u.APIKey)
			h.Set("Accept", "application/vnd.github+json")
			h.Set("X-GitHub-Api-Version", githubVersion)
		}}
}

// checkGitHub checks src's hook and asks GitHub to deliver again what
// failed in the backfill window and hookbox does not hold.
func (c *Checker) checkGitHub(ctx context.Context, src *app.Source, res *app.UpstreamCheck, prev *app.UpstreamCheck) error {
	u := src.Upstream
	a := githubAPI(c, u)
	hook := "/" + u.Endpoint
	var h githubHook
	if _, err := a.call(ctx, http.MethodGet, hook, nil, "", &h); err != nil {
		return err
	}
	res.Subscription = "enabled"
	if !h.Active {
		res.Subscription = "disabled"
		what := fmt.Sprintf("GitHub hook %s", u.Endpoint)
		if u.Repair {
			var after githubHook
			if _, err := a.call(ctx, http.MethodPatch, hook, []byte(`{"active":true}`), "application/json", &after); err != nil {
				c.disabled(ctx, src, res, prev, what, "Turning it on failed: "+err.Error())
				return err
			}
			if after.Active {
				res.Subscription, res.Repaired = "enabled", true
			}
		}
		c.disabled(ctx, src, res, prev, what, "")
	}
	failed, err := c.githubFailed(ctx, a, hook, src, res)
	if err != nil {
		return err
	}
	for _, d := range failed {
		if res.Redelivered == maxRedeliveries {
			break
		}
		path := fmt.Sprintf("%s/deliveries/%d/attempts", hook, d.ID)
		if _, err := a.call(ctx, http.MethodPost, path, nil, "", nil); err != nil {
			return err
		}
		res.Redelivered++
		c.Logger.Info("upstream: asked GitHub to deliver again", "source", src.Name, "delivery", d.GUID, "event", d.Event)
	}
	return nil
}

// githubFailed pages through the hook's deliveries of the window and
// returns, once per guid, the newest failed delivery of each guid that
// hookbox does not hold and that no delivery of the same guid delivered.
func (c *Checker) githubFailed(ctx context.Context, a *api, hook string, src *app.Source, res *app.UpstreamCheck) ([]githubDelivery, error) {
	since := c.Now().Add(-src.Upstream.Backfill)
	delivered := map[string]bool{}
	var failed []githubDelivery
	seen := map[string]bool{}
	next := hook + "/deliveries?per_page=100"
	for page := 0; next != ""; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("GET %s/deliveries: more than %d pages in the window: shorten backfill", hook, maxPages)
		}
		var ds []githubDelivery
		h, err := a.call(ctx, http.MethodGet, next, nil, "", &ds)
		if err != nil {
			return nil, err
		}
		next = nextLink(h.Get("Link"), a.base)
		for _, d := range ds {
			if d.DeliveredAt.Before(since) {
				next = "" // newest first: the rest are older still
				continue
			}
			if d.GUID == "" {
				continue
			}
			if !seen[d.GUID] {
				seen[d.GUID] = true
				res.Seen++
			}
			if d.StatusCode >= 200 && d.StatusCode <= 299 {
				delivered[d.GUID] = true
				continue
			}
			failed = append(failed, d)
		}
	}
	var out []githubDelivery
	asked := map[string]bool{}
	for _, d := range failed { // newest first: the newest failure of each guid
		if delivered[d.GUID] || asked[d.GUID] {
			continue
		}
		asked[d.GUID] = true
		held, err := c.holds(ctx, src.Name, d.GUID)
		if err != nil {
			return nil, err
		}
		if held {
			res.Held++
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// linkNext matches the rel="next" link of a Link header.
var linkNext = regexp.MustCompile(`<([^>]+)>\s*;\s*rel="next"`)

// nextLink returns the next page's URL of a Link header when it is on
// base (api_url), "" when there is none. A link elsewhere is not followed:
// the key goes only to api_url.
func nextLink(link, base string) string {
	m := linkNext.FindStringSubmatch(link)
	if m == nil {
		return ""
	}
	if !strings.HasPrefix(m[1], base+"/") {
		return ""
	}
	return m[1]
}
