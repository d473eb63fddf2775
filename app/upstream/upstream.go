// Package upstream is the checker of the providers' side: for each source
// with a [source.upstream] table it reads the provider's API with the
// merchant's key, on the source's schedule and on demand, alerts when the
// webhook subscription is off (and turns it on again with repair), and
// takes in what never arrived: Stripe's events through the receiver's
// path, GitHub's failed deliveries by asking GitHub to send them again.
// Everything it does is logged, counted, audited (actor "upstream") when
// it changed something or failed, and its last check per source is kept.
package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"hookbox/app"
)

// Taker takes in a fetched event as if it had arrived (receive.Receiver).
type Taker interface {
	Take(ctx context.Context, source string, f app.Fetched) (app.Result, error)
}

// Checker runs the upstream checks.
type Checker struct {
	store app.UpstreamStore
	taker Taker
	cfg   atomic.Pointer[app.Config]

	// Client calls the providers (NewClient's by default).
	Client *http.Client
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger
	// Alert, when set, sends a subscription_disabled alert; an error when
	// no channel took it (the next check tries again).
	Alert func(ctx context.Context, m app.AlertMessage) error
	// Audit, when set, records what a check changed or why it failed.
	Audit func(ctx context.Context, e app.AuditEntry)
	// Metrics, when set, counts the checks and what they took in.
	Metrics app.Metrics
}

// New builds the checker of cfg's sources over store, taking fetched
// events in through taker.
func New(cfg *app.Config, store app.UpstreamStore, taker Taker) *Checker {
	c := &Checker{store: store, taker: taker, Client: NewClient(), Now: time.Now, Logger: slog.With("component", "upstream")}
	c.Apply(cfg)
	return c
}

// Apply puts cfg's upstream tables in force for the checks that start
// from now on. It says, for each Shopify source, what cannot be checked
// at load: the subscriptions a check makes are the app's, signed with its
// client secret, which must be among the source's secrets.
func (c *Checker) Apply(cfg *app.Config) {
	c.cfg.Store(cfg)
	for _, s := range cfg.Sources {
		if s.Upstream != nil && s.Provider == "shopify" {
			c.Logger.Info("upstream: the subscriptions a check makes for this source are the app's whose token api_key is: "+
				"Shopify signs them with that app's client secret, which must be among the source's secrets", "source", s.Name)
		}
	}
}

// Sources returns the names of the sources of cfg that have an upstream.
func Sources(cfg *app.Config) []string {
	var out []string
	for _, s := range cfg.Sources {
		if s.Upstream != nil {
			out = append(out, s.Name)
		}
	}
	return out
}

// Scheduled is the check of source that its schedule starts: skipped
// while the provider's Retry-After holds.
func (c *Checker) Scheduled(ctx context.Context, source string) {
	if last, err := c.LastCheck(ctx, source); err == nil && last != nil && last.RetryAfter != nil && c.Now().Before(*last.RetryAfter) {
		c.Logger.Info("upstream check skipped: the provider asked to wait", "source", source, "until", last.RetryAfter.UTC().Format(time.RFC3339))
		return
	}
	c.check(ctx, source, app.Who{Actor: app.UpstreamActor, Via: "schedule", From: "local"})
}

// CheckNow runs the check of source ("" for every source with an
// upstream) now, for who, one source after another (app.Upstreams).
func (c *Checker) CheckNow(ctx context.Context, source string, who app.Who) ([]app.UpstreamCheck, error) {
	cfg := c.cfg.Load()
	names := Sources(cfg)
	if source != "" {
		s := cfg.SourceByName(source)
		switch {
		case s == nil:
			return nil, app.Errorf(app.ENOTFOUND, "no source %q", source)
		case s.Upstream == nil:
			return nil, app.Errorf(app.EINVALID, "source %q has no [source.upstream] table: nothing to check", source)
		}
		names = []string{source}
	}
	out := make([]app.UpstreamCheck, 0, len(names))
	for _, name := range names {
		out = append(out, c.check(ctx, name, who))
	}
	return out, nil
}

// LastCheck returns the last check of source kept, nil when none ran
// (app.Upstreams).
func (c *Checker) LastCheck(ctx context.Context, source string) (*app.UpstreamCheck, error) {
	b, err := c.store.Meta(ctx, app.UpstreamCheckMeta(source))
	if err != nil || b == nil {
		return nil, err
	}
	var r app.UpstreamCheck
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("last upstream check of %s: %w", source, err)
	}
	return &r, nil
}

// check runs one check of source, under the source's lock (one node of a
// cluster at a time), and keeps, logs, counts and audits its result.
func (c *Checker) check(ctx context.Context, source string, who app.Who) app.UpstreamCheck {
	cfg := c.cfg.Load()
	src := cfg.SourceByName(source)
	res := app.UpstreamCheck{Source: source, Started: c.Now().UTC(), By: who.Actor}
	if src == nil || src.Upstream == nil {
		res.Error = "the source has no [source.upstream] table any more"
		res.Finished = res.Started
		return res
	}
	res.Provider, res.Endpoint = src.Provider, src.Upstream.Endpoint
	release, ok, err := c.store.TryJobLock(ctx, "upstream/"+source)
	switch {
	case err != nil:
		res.Error = "the store is unavailable: " + err.Error()
		res.Finished = c.Now().UTC()
		c.Logger.Error("upstream check: take the lock", "source", source, slog.Any("error", err))
		c.count(source, "failed", &res)
		return res
	case !ok:
		res.Error = "a check of this source is running (on this node or another): its result will be kept"
		res.Finished = c.Now().UTC()
		c.count(source, "busy", &res)
		return res
	}
	defer release()
	prev, err := c.LastCheck(ctx, source)
	if err != nil {
		c.Logger.Warn("upstream check: the last result cannot be read", "source", source, slog.Any("error", err))
	}
	switch src.Provider {
	case "stripe":
		err = c.checkStripe(ctx, src, &res, prev)
	case "github":
		err = c.checkGitHub(ctx, src, &res, prev)
	case "woocommerce":
		err = c.checkWoo(ctx, src, &res, prev)
	case "shopify":
		err = c.checkShopify(ctx, src, &res, prev)
	default:
		err = fmt.Errorf("hookbox cannot check provider %s's side", src.Provider)
	}
	res.Finished = c.Now().UTC()
	if res.Subscription != "disabled" || res.Repaired {
		res.Alerted = false // the episode is over (or none began)
	}
	result := "ok"
	if err != nil {
		result = "failed"
		res.Error = err.Error()
		var ae *apiError
		if errors.As(err, &ae) && !ae.RetryAfter.IsZero() {
			at := ae.RetryAfter.UTC()
			res.RetryAfter = &at
		}
	}
	c.keep(ctx, &res)
	c.count(source, result, &res)
	c.report(ctx, &res, who)
	return res
}

// take takes in f unless hookbox holds it, counting what it did.
func (c *Checker) take(ctx context.Context, src *app.Source, f app.Fetched, res *app.UpstreamCheck) error {
	held, err := c.holds(ctx, src.Name, f.ID)
	if err != nil {
		return err
	}
	if held {
		res.Held++
		return nil
	}
	f.Body = bytes.Clone(f.Body)
	r, err := c.taker.Take(ctx, src.Name, f)
	if err != nil {
		return fmt.Errorf("take in event %s: %s", f.ID, app.ErrorMessage(err))
	}
	if r.Outcome == app.Duplicate { // its webhook came meanwhile
		res.Held++
		return nil
	}
	res.Fetched++
	c.Logger.Info("upstream: event fetched and taken in", "source", src.Name, "event", f.ID, "topic", f.Topic,
		"created", f.At.UTC().Format(time.RFC3339))
	return nil
}

// holds reports whether hookbox remembers source's id.
func (c *Checker) holds(ctx context.Context, source, id string) (bool, error) {
	_, _, ok, err := c.store.LookupID(ctx, source, id)
	if err != nil {
		return false, fmt.Errorf("the store is unavailable: %w", err)
	}
	return ok, nil
}

// disabled alerts, once per episode, that the provider sends src
// nothing; note says more (a repair that failed).
func (c *Checker) disabled(ctx context.Context, src *app.Source, res *app.UpstreamCheck, prev *app.UpstreamCheck, what, note string) {
	if res.Alerted {
		return
	}
	if prev != nil && prev.Alerted && prev.Subscription == "disabled" && !prev.Repaired && !res.Repaired {
		res.Alerted = true // this episode's alert went out
		return
	}
	state := "is disabled"
	if src.Provider == "shopify" {
		state = "is gone (Shopify deletes a subscription after repeated failed deliveries)"
	}
	text := fmt.Sprintf("hookbox: %s of source %s %s: %s sends it no webhooks.", what, src.Name, state, providerName(src.Provider))
	switch {
	case res.Repaired && src.Provider == "shopify":
		text += " hookbox subscribed again."
	case res.Repaired:
		text += " hookbox turned it on again (repair = true)."
	case note != "":
		text += " " + note
	default:
		text += " Turn it on again at the provider (or set repair = true in [source.upstream])."
	}
	m := app.AlertMessage{Kind: app.AlertSubscriptionDisabled, Source: src.Name,
		Subject: fmt.Sprintf("hookbox: the %s of source %s is disabled", what, src.Name), Text: text}
	c.Logger.Warn("upstream: the provider's subscription is disabled", "source", src.Name, "endpoint", src.Upstream.Endpoint,
		"repaired", res.Repaired)
	if c.Alert == nil {
		return
	}
	if err := c.Alert(ctx, m); err != nil {
		c.Logger.Error("upstream: send the alert", "source", src.Name, slog.Any("error", err))
		return
	}
	res.Alerted = !res.Repaired
}

// keep stores res as the source's last check.
func (c *Checker) keep(ctx context.Context, res *app.UpstreamCheck) {
	b, _ := json.Marshal(res)
	if err := c.store.SetMeta(context.WithoutCancel(ctx), app.UpstreamCheckMeta(res.Source), b); err != nil {
		c.Logger.Error("upstream check: keep the result", "source", res.Source, slog.Any("error", err))
	}
}

// count reports a check to the metrics.
func (c *Checker) count(source, result string, res *app.UpstreamCheck) {
	if c.Metrics != nil {
		c.Metrics.Upstream(source, result, res.Fetched, res.Redelivered)
	}
}

// report logs res, and audits it when it changed something or failed.
func (c *Checker) report(ctx context.Context, res *app.UpstreamCheck, who app.Who) {
	attrs := []any{"source", res.Source, "provider", res.Provider, "subscription", res.Subscription, "seen", res.Seen,
		"held", res.Held, "fetched", res.Fetched, "redelivered", res.Redelivered, "young", res.Young,
		"took", res.Finished.Sub(res.Started).Round(time.Millisecond).String()}
	if res.Repaired {
		attrs = append(attrs, "repaired", true)
	}
	for _, n := range res.Notes {
		attrs = append(attrs, "note", n)
	}
	if res.Error != "" {
		c.Logger.Warn("upstream check failed: the next check tries again", append(attrs, "error", res.Error)...)
	} else {
		c.Logger.Info("upstream check", attrs...)
	}
	if c.Audit == nil || (res.OK() && res.Fetched == 0 && res.Redelivered == 0 && !res.Repaired && who.Via == "schedule") {
		return // a scheduled check that found all well: the log and the result say it
	}
	detail := fmt.Sprintf("subscription %s, seen %d, held %d, fetched %d, redelivered %d", orNone(res.Subscription),
		res.Seen, res.Held, res.Fetched, res.Redelivered)
	if res.Repaired {
		detail += ", re-enabled"
	}
	for _, n := range res.Notes {
		detail += "; " + n
	}
	var err error
	if res.Error != "" {
		err = app.Errorf(app.EUNAVAILABLE, "%s", res.Error)
	}
	e := who.Entry(app.AuditUpstream, res.Source, detail, err)
	if who.Actor != app.UpstreamActor {
		e.Detail = "by " + who.Actor + "; " + e.Detail // asked by a person: the check is still upstream's
	}
	e.Actor = app.UpstreamActor
	e.At = res.Finished
	c.Audit(ctx, e)
}

func orNone(s string) string {
	if s == "" {
		return "not read"
	}
	return s
}
