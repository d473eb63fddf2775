// The provider's side of a source: [source.upstream] (what hookbox asks
// the provider's API, with the merchant's key), and what a check of it
// found and did. The checker is app/upstream.

package app

import (
	"context"
	"time"
)

// Upstream is a source's [source.upstream] table: hookbox reads the
// provider's API with APIKey, on a schedule (Check) and on demand, to see
// that the webhook subscription is on and to take in what never arrived.
type Upstream struct {
	// APIKey is the provider's API key (a secret: never logged or shown).
	APIKey string
	// Endpoint names the subscription: a Stripe webhook endpoint id
	// (we_…), a GitHub hook's API path (repos/OWNER/REPO/hooks/ID or
	// orgs/ORG/hooks/ID).
	Endpoint string
	// Topics are the subscriptions to keep in place (Shopify).
	Topics []string
	// APIURL is the provider's API, without a trailing slash.
	APIURL string
	// APIVersion is the API version asked for (Shopify).
	APIVersion string
	// Check is the cron spec of the scheduled check.
	Check string
	// Backfill is how far back a check looks.
	Backfill time.Duration
	// Repair re-enables a disabled endpoint or hook.
	Repair bool
}

// UpstreamProvider is what hookbox knows of a provider's API.
type UpstreamProvider struct {
	// APIURL is the API's address, the default of api_url ("": the
	// shop's own, which api_url must name).
	APIURL string
	// Keeps is how long the provider keeps what a check looks at (Stripe's
	// events, GitHub's deliveries): the most backfill may say; 0 when it
	// keeps no list of missed events (a check then only repairs).
	Keeps time.Duration
	// Backfill is backfill's default.
	Backfill time.Duration
	// Endpoint describes what endpoint names, for errors.
	Endpoint string
}

// UpstreamProviders are the providers whose API a check reads, by
// provider name. Shopify and WooCommerce come later.
var UpstreamProviders = map[string]UpstreamProvider{
	"stripe": {APIURL: "https://api.stripe.com", Keeps: 30 * 24 * time.Hour, Backfill: 72 * time.Hour,
		Endpoint: `the webhook endpoint's id, e.g. endpoint = "we_123"`},
	"github": {APIURL: "https://api.github.com", Keeps: 72 * time.Hour, Backfill: 72 * time.Hour,
		Endpoint: `the hook's API path, e.g. endpoint = "repos/OWNER/REPO/hooks/123" or "orgs/ORG/hooks/123"`},
	"shopify":     {},
	"woocommerce": {Endpoint: `the webhook's id (WooCommerce → Settings → Advanced → Webhooks), e.g. endpoint = "12"`},
}

// DefaultShopifyVersion is [source.upstream] api_version's default: the
// Admin API version a Shopify check asks for, one Shopify supports.
const DefaultShopifyVersion = "2026-10"

// DefaultUpstreamCheck is [source.upstream] check's default.
const DefaultUpstreamCheck = "@every 10m"

// FetchedSettle is how young an event a check leaves alone: its webhook
// may still be on its way.
const FetchedSettle = 5 * time.Minute

// OriginFetched is Event.Origin of an event a check fetched from the
// provider's API rather than received as a webhook.
const OriginFetched = "fetched"

// UpstreamActor is the audit actor of what a check did (AuditUpstream).
const UpstreamActor = "upstream"

// Fetched is an event a check took from the provider's API: it goes in
// through the receiver's path (dedup, routes, debounce) without a
// signature, the API's TLS and key vouching for it.
type Fetched struct {
	ID    string
	Topic string
	Body  []byte
	// At is when the provider says the event happened.
	At time.Time
}

// UpstreamCheck is what one check of a source's upstream found and did,
// kept (the last one per source) so that a restart shows it.
type UpstreamCheck struct {
	Source   string    `json:"source"`
	Provider string    `json:"provider"`
	Endpoint string    `json:"endpoint"`
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	// By is what started it: "schedule", or who asked.
	By string `json:"by"`
	// Subscription is the endpoint's or hook's state as the provider
	// showed it: "enabled", "disabled", or "" when it was not read.
	Subscription string `json:"subscription,omitempty"`
	// Repaired says the check re-enabled it.
	Repaired bool `json:"repaired,omitempty"`
	// Notes say what the check found and left alone (a webhook the
	// merchant paused, one that delivers elsewhere).
	Notes []string `json:"notes,omitempty"`
	// Alerted says a subscription_disabled alert went out for this
	// episode (kept, so that the next check does not send it again).
	Alerted bool `json:"alerted,omitempty"`
	// Seen counts what the provider listed in the window (events,
	// deliveries); Held what hookbox already had; Fetched the events
	// taken in; Redelivered the deliveries asked again; Young the events
	// left for their webhook.
	Seen        int `json:"seen"`
	Held        int `json:"held"`
	Fetched     int `json:"fetched"`
	Redelivered int `json:"redelivered"`
	Young       int `json:"young"`
	// Error says why the check did not finish (an API's answer, a
	// timeout); the next check tries again.
	Error string `json:"error,omitempty"`
	// RetryAfter is when the provider asked to be called again (429).
	RetryAfter *time.Time `json:"retry_after,omitempty"`
}

// OK reports whether the check finished without an error.
func (c *UpstreamCheck) OK() bool { return c.Error == "" }

// UpstreamCheckMeta is the MetaStore name the last check of source is
// kept under.
func UpstreamCheckMeta(source string) string { return "upstream_check/" + source }

// Upstreams is what the edge (app/web) asks of the checker.
type Upstreams interface {
	// CheckNow runs the check of source ("" for every source with an
	// upstream) now, for who, and returns what each found.
	CheckNow(ctx context.Context, source string, who Who) ([]UpstreamCheck, error)
	// LastCheck returns the last check of source, nil when none ran.
	LastCheck(ctx context.Context, source string) (*UpstreamCheck, error)
}
