// [source.upstream]: what hookbox asks of the provider's API (the
// checker is app/upstream). The key is a secret like the others: errors
// name api_key or api_key_env, never the value.

package config

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strings"

	"github.com/robfig/cron/v3"

	"hookbox/app"
)

type rawUpstream struct {
	APIKey     string   `toml:"api_key"`
	APIKeyEnv  string   `toml:"api_key_env"`
	Endpoint   string   `toml:"endpoint"`
	Topics     []string `toml:"topics"`
	APIURL     string   `toml:"api_url"`
	APIVersion string   `toml:"api_version"`
	Check      string   `toml:"check"`
	Backfill   string   `toml:"backfill"`
	Repair     bool     `toml:"repair"`
}

// endpoints are what each provider's endpoint looks like.
var endpoints = map[string]*regexp.Regexp{
	"stripe":      regexp.MustCompile(`^we_[A-Za-z0-9]{1,64}$`),
	"github":      regexp.MustCompile(`^(repos/[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}|orgs/[A-Za-z0-9_.-]{1,100})/hooks/[0-9]{1,20}$`),
	"woocommerce": regexp.MustCompile(`^[0-9]{1,20}$`),
}

// upstreamProviders names the providers a check knows, for errors.
func upstreamProviders() string {
	names := make([]string, 0, len(app.UpstreamProviders))
	for n := range app.UpstreamProviders {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// upstream checks a source's [source.upstream] table (key is the
// source's, e.g. "source[0] (pay)"); nil when there is none or it has a
// mistake (reported).
func (v *validator) upstream(key, provider string, r *rawUpstream, publicURL string) *app.Upstream {
	if r == nil {
		return nil
	}
	key += ".upstream"
	failed := v.failed()
	p, known := app.UpstreamProviders[provider]
	if !known {
		v.fail(key, fmt.Sprintf("hookbox cannot check provider %q's side yet: [source.upstream] takes a source of %s", provider, upstreamProviders()))
		return nil
	}
	u := &app.Upstream{Endpoint: r.Endpoint, Repair: r.Repair, APIURL: p.APIURL}
	switch {
	case r.APIKey != "" && r.APIKeyEnv != "":
		v.fail(key+".api_key", "set api_key or api_key_env, not both")
	case r.APIKeyEnv != "":
		u.APIKey = v.env1(key+".api_key_env", r.APIKeyEnv)
	case r.APIKey != "":
		u.APIKey = r.APIKey
	case !v.isBroken(key+".api_key") && !v.isBroken(key+".api_key_env"):
		v.fail(key+".api_key_env", "no API key: name the environment variable that holds it, api_key_env = \"STRIPE_API_KEY\" (or set api_key)")
	}
	if ck, cs, ok := strings.Cut(u.APIKey, ":"); provider == "woocommerce" && u.APIKey != "" && (!ok || ck == "" || cs == "") {
		k := key + ".api_key"
		if r.APIKeyEnv != "" {
			k += "_env"
		}
		v.fail(k, "a WooCommerce key is the REST API key's consumer key and secret joined by a colon: ck_…:cs_…")
	}
	switch {
	case provider == "shopify":
		v.shopifyUpstream(key, r, u, publicURL)
	case r.Endpoint == "":
		v.fail(key+".endpoint", "is missing: "+p.Endpoint)
	case !endpoints[provider].MatchString(r.Endpoint):
		v.fail(key+".endpoint", fmt.Sprintf("%q is not %s", r.Endpoint, p.Endpoint))
	}
	if provider != "shopify" && len(r.Topics) > 0 {
		v.fail(key+".topics", fmt.Sprintf("a %s source takes no topics: the endpoint names what it sends", provider))
	}
	if provider != "shopify" && r.APIVersion != "" {
		v.fail(key+".api_version", fmt.Sprintf("a %s source takes no api_version", provider))
	}
	if r.APIURL == "" && p.APIURL == "" {
		v.fail(key+".api_url", "is missing: the shop's address, whose API a check reads, e.g. api_url = \"https://shop.example\"")
	}
	if r.APIURL != "" {
		if reason := apiURLProblem(r.APIURL); reason != "" {
			v.fail(key+".api_url", reason)
		} else {
			u.APIURL = strings.TrimRight(r.APIURL, "/")
		}
	}
	u.Check = r.Check
	if u.Check == "" {
		u.Check = app.DefaultUpstreamCheck
	}
	if _, err := cron.ParseStandard(u.Check); err != nil {
		v.fail(key+".check", fmt.Sprintf("%q is not a cron spec (e.g. \"@every 10m\"): %v", u.Check, err))
	}
	switch {
	case p.Keeps == 0 && r.Backfill != "":
		v.fail(key+".backfill", fmt.Sprintf("%s keeps no list of missed events: a check turns the webhook on again (repair), it cannot fetch what was missed", providerTitle(provider)))
	case p.Keeps == 0:
	default:
		u.Backfill = v.duration(key+".backfill", r.Backfill, p.Backfill)
	}
	if u.Backfill > p.Keeps {
		v.fail(key+".backfill", fmt.Sprintf("%s is longer than %s keeps what a check reads (%s)", app.ShortDuration(u.Backfill), provider, app.ShortDuration(p.Keeps)))
	}
	if v.failed() > failed {
		return nil
	}
	return u
}

// apiURLProblem says what is wrong with an api_url, "" when nothing: an
// absolute https URL without a query (http only to this machine: the
// key must not cross a network in clear).
func apiURLProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Sprintf("%q is not an absolute https URL", s)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Sprintf("%q: give the API's address alone, without a query, fragment or login", s)
	case u.Scheme == "http" && !loopback(u.Hostname()):
		return fmt.Sprintf("%q: the API key would cross the network in clear: use https (http only to this machine)", s)
	}
	return ""
}

// loopback reports whether host is this machine.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// providerTitle is a provider's name as a sentence writes it.
func providerTitle(p string) string {
	switch p {
	case "woocommerce":
		return "WooCommerce"
	case "shopify":
		return "Shopify"
	}
	return p
}

// shopifyTopic is a Shopify webhook topic as the GraphQL Admin API names
// it (WebhookSubscriptionTopic).
var shopifyTopic = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,79}$`)

// shopifyVersion is an Admin API version.
var shopifyVersion = regexp.MustCompile(`^(20[0-9]{2}-(01|04|07|10)|unstable)$`)

// shopifyUpstream checks what only a Shopify source's upstream takes:
// topics (the subscriptions to keep in place), api_version, and no
// endpoint; the subscriptions point at the source's public URL.
func (v *validator) shopifyUpstream(key string, r *rawUpstream, u *app.Upstream, publicURL string) {
	if r.Endpoint != "" {
		v.fail(key+".endpoint", "a Shopify source takes no endpoint: topics name the subscriptions to keep in place")
	}
	if len(r.Topics) == 0 && !v.isBroken(key+".topics") {
		v.fail(key+".topics", `is missing: the subscriptions to keep in place, as the GraphQL Admin API names them, e.g. topics = ["ORDERS_CREATE"]`)
	}
	seen := map[string]bool{}
	for i, t := range r.Topics {
		switch {
		case !shopifyTopic.MatchString(t):
			v.fail(fmt.Sprintf("%s.topics[%d]", key, i), fmt.Sprintf("%q is not a topic as the GraphQL Admin API names it (ORDERS_CREATE, not orders/create)", t))
		case seen[t]:
			v.fail(fmt.Sprintf("%s.topics[%d]", key, i), fmt.Sprintf("%s is named twice", t))
		}
		seen[t] = true
	}
	u.Topics = r.Topics
	u.APIVersion = app.DefaultShopifyVersion
	if r.APIVersion != "" {
		if !shopifyVersion.MatchString(r.APIVersion) {
			v.fail(key+".api_version", fmt.Sprintf("%q is not an Admin API version (e.g. %q)", r.APIVersion, app.DefaultShopifyVersion))
		}
		u.APIVersion = r.APIVersion
	}
	if publicURL == "" {
		v.fail("server.public_url", "a Shopify source's [source.upstream] makes subscriptions to this server's URL: set public_url to the address Shopify posts to")
	}
}
