// Validating a config: the validator (errors.go) turns each raw table
// into its Config type, with defaults, and records every key that is
// wrong, naming the file, the line, the key and the reason.

package config

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"hookbox/app"
	"hookbox/app/fields"
	"hookbox/app/provider"
)

// idsOutlastDeliveries refuses a retention.event_ids shorter than the
// longest an event can be on its way: held by a route's debounce window
// and rate limit, then retried by a destination to the end of its
// schedule. A sender that resends an id hookbox already forgot gets it
// accepted, and the event delivered twice.
func (v *validator) idsOutlastDeliveries(cfg *app.Config) {
	if v.failed() > 0 { // computed from values that may be defaults in place of wrong ones
		return
	}
	var longest time.Duration
	var why string
	for _, r := range cfg.Routes {
		hold := r.Debounce + r.RateLimit.Window
		for _, name := range r.To {
			d := cfg.DestinationByName(name)
			if d == nil {
				continue
			}
			if total := hold + d.RetryHorizon(); total > longest {
				longest = total
				why = fmt.Sprintf("destination %q retries for up to %s (%s)", d.Name, app.ShortDuration(d.RetryHorizon()), d.ScheduleText())
				if hold > 0 {
					held := "debounce " + app.ShortDuration(r.Debounce)
					if r.RateLimit.Window > 0 {
						held += " plus one rate_limit window of " + app.ShortDuration(r.RateLimit.Window)
					}
					why = fmt.Sprintf("route %q holds an event up to %s (%s), then %s", r.Name, app.ShortDuration(hold), held, why)
				}
			}
		}
	}
	if ids := cfg.Retention.EventIDs; ids < longest {
		v.fail("retention.event_ids", fmt.Sprintf("%s is shorter than a delivery can take: %s; a sender that resends the event's id after hookbox forgot it would get it accepted and delivered twice. Set event_ids to at least %s",
			app.ShortDuration(ids), why, app.ShortDuration(longest.Truncate(time.Minute)+time.Minute)))
	}
}

func (v *validator) status(s *app.StatusConfig, r rawStatus) {
	s.User = r.User
	if s.User == "" {
		s.User = app.DefaultStatusUser
	}
	s.Password = r.Password
	s.MetricsPublic = r.MetricsPublic
	if r.PasswordEnv != "" {
		s.Password = v.env1("status.password_env", r.PasswordEnv)
	}
}

func (v *validator) alerts(a *app.AlertsConfig, r rawAlerts) {
	if r.DeadLettersOver != nil {
		a.DeadLettersOver = *r.DeadLettersOver
		if a.DeadLettersOver < 0 {
			v.fail("alerts.dead_letters_over", "must be 0 or more")
		}
	}
	a.URL = r.URL
	if r.URLEnv != "" {
		a.URL = v.env1("alerts.url_env", r.URLEnv)
	}
	if a.URL != "" && !httpURL(a.URL) {
		v.fail("alerts.url", "is not an absolute http(s) URL")
	}
	a.Check = r.Check
	if a.Check == "" {
		a.Check = app.DefaultAlertCheck
	}
	if _, err := cron.ParseStandard(a.Check); err != nil {
		v.fail("alerts.check", fmt.Sprintf("%q is not a cron spec: %v", a.Check, err))
	}
	a.FailingFor = app.DefaultFailingFor
	if r.FailingFor != "" {
		d, err := time.ParseDuration(r.FailingFor)
		switch {
		case err != nil:
			v.fail("alerts.failing_for", fmt.Sprintf("%q is not a duration (use e.g. \"10m\", \"1h\"; \"0\" turns the alert off)", r.FailingFor))
		case d < 0:
			v.fail("alerts.failing_for", "must be 0 (off) or more")
		default:
			a.FailingFor = d
		}
	}
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func (v *validator) destination(key string, r rawDestination) *app.Destination {
	if !sourceName.MatchString(r.Name) {
		v.fail(key+".name", "must be 1-64 of a-z, 0-9, '_' and '-', starting with a letter or digit")
		return nil
	}
	d := &app.Destination{Name: r.Name, URL: r.URL, Headers: r.Headers, Concurrency: app.DefaultConcurrency, Retry: app.DefaultRetry}
	switch {
	case r.Command != nil && r.URL != "":
		v.fail(key+".command", "a destination has either url or command, not both")
	case r.Command != nil || r.Env != nil:
		v.command(key, d, r) // command.go
	case r.URL == "":
		v.fail(key+".url", "is missing: a destination needs url (an absolute http(s) URL) or command (a program to run)")
	default:
		if u, err := url.Parse(r.URL); err != nil || !httpURL(r.URL) || u.User != nil {
			v.fail(key+".url", "must be an absolute http(s) URL without user:password (put credentials in headers)")
		}
	}
	secret := r.Secret
	if r.SecretEnv != "" {
		secret = v.env1(key+".secret_env", r.SecretEnv)
	}
	if secret != "" {
		if _, err := provider.New("standard", provider.Settings{Secrets: [][]byte{[]byte(secret)}}); err != nil {
			v.fail(key+".secret", "must be a Standard Webhooks secret: whsec_ followed by base64")
		}
		d.Secret = []byte(secret)
	}
	d.Timeout = v.duration(key+".timeout", r.Timeout, app.DefaultTimeout)
	if r.Retry != nil {
		d.Retry = make([]time.Duration, 0, len(*r.Retry))
		for i, s := range *r.Retry {
			k := fmt.Sprintf("%s.retry[%d]", key, i)
			if s == "" {
				v.fail(k, "is empty")
			}
			d.Retry = append(d.Retry, v.duration(k, s, time.Minute))
		}
	}
	if r.Concurrency != nil {
		d.Concurrency = *r.Concurrency
		if d.Concurrency < 1 || d.Concurrency > 1024 {
			v.fail(key+".concurrency", "must be between 1 and 1024")
		}
	}
	if r.Rate != "" {
		rate, err := app.ParseRate(r.Rate)
		if err != nil {
			v.fail(key+".rate", err.Error())
		}
		d.Rate = rate
	}
	switch r.SignatureHeaders {
	case "", app.SignatureHeadersStandard:
		d.SignatureHeaders = app.SignatureHeadersStandard
	case app.SignatureHeadersSvix:
		d.SignatureHeaders = app.SignatureHeadersSvix
		if secret == "" {
			v.fail(key+".signature_headers", `"svix" needs the destination's secret: without one there is no signature to send`)
		}
	default:
		v.fail(key+".signature_headers", fmt.Sprintf("%q is not one of %q (webhook-* headers) and %q (webhook-* and svix-*)",
			r.SignatureHeaders, app.SignatureHeadersStandard, app.SignatureHeadersSvix))
	}
	d.ForwardSignatures = defaultForwardSignatures(d)
	if r.ForwardSignatures != nil {
		d.ForwardSignatures = *r.ForwardSignatures
	}
	for name, value := range r.Headers {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			v.fail(key+".headers", fmt.Sprintf("%q is not a header name", name))
		} else if strings.ContainsAny(value, "\r\n\x00") {
			v.fail(key+".headers."+name, "a header value cannot hold a line break or NUL")
		}
	}
	return d
}

// defaultForwardSignatures is whether destination d gets the provider's
// signature headers when its config does not say: a destination with a
// URL does, so that a merchant's app that checks Shopify's or Stripe's own
// signature keeps working. A command does not: it runs on this box after
// hookbox checked the signature, and a credential it has no use for is
// better kept out of its environment (forward_signatures = true puts it
// there).
func defaultForwardSignatures(d *app.Destination) bool { return len(d.Command) == 0 }

// route checks one [[route]]. Its source and destinations are looked up
// among the tables written (raw), not only the valid ones: a source
// refused for its own mistake is not reported again as missing.
func (v *validator) route(key string, r rawRoute, cfg *app.Config, raw rawConfig) *app.Route {
	var sources, dests []string
	for _, s := range raw.Source {
		sources = append(sources, s.Name)
	}
	for _, d := range raw.Destination {
		dests = append(dests, d.Name)
	}
	if !slices.Contains(sources, r.Source) {
		v.fail(key+".source", fmt.Sprintf("no [[source]] named %q%s", r.Source, didYouMean(r.Source, sources)))
	}
	if len(r.To) == 0 {
		v.fail(key+".to", "names no destination")
	}
	for i, name := range r.To {
		if !slices.Contains(dests, name) {
			v.fail(fmt.Sprintf("%s.to[%d]", key, i), fmt.Sprintf("no [[destination]] named %q%s", name, didYouMean(name, dests)))
		}
	}
	for i, g := range r.Topics {
		if g == "" {
			v.fail(fmt.Sprintf("%s.topics[%d]", key, i), "is empty")
		}
	}
	route := &app.Route{Name: r.Name, Source: r.Source, Topics: r.Topics, To: r.To}
	if r.Name != "" && !sourceName.MatchString(r.Name) {
		v.fail(key+".name", "must be 1-64 of a-z, 0-9, '_' and '-', starting with a letter or digit")
	}
	route.Key = v.template(key+".key", r.Key)
	if r.Debounce != "" {
		route.Debounce = v.duration(key+".debounce", r.Debounce, 0)
	}
	if r.RateLimit != "" {
		rl, err := app.ParseRateLimit(r.RateLimit)
		if err != nil {
			v.fail(key+".rate_limit", err.Error())
		}
		route.RateLimit = rl
	}
	if route.Key == nil && (r.Debounce != "" || r.RateLimit != "") {
		v.fail(key+".key", "debounce and rate_limit work per entity: set key, e.g. \"{header.X-Shopify-Shop-Domain}:{body.id}\"")
	}
	if route.Key != nil && r.Debounce == "" && r.RateLimit == "" {
		v.fail(key+".key", "a key needs debounce or rate_limit")
	}
	v.rules(key, r, route) // rules.go
	return route
}

func (v *validator) duration(key, s string, def time.Duration) time.Duration {
	if s == "" {
		return def
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		v.fail(key, fmt.Sprintf("%q is not a duration (use e.g. \"90s\", \"5m\", \"720h\")", s))
		return def
	}
	if d <= 0 {
		v.fail(key, "must be positive")
	}
	return d
}

func (v *validator) retention(r *app.RetentionConfig, raw rawRetention) {
	r.EventIDs = v.duration("retention.event_ids", raw.EventIDs, app.DefaultEventIDs)
	r.Events = v.duration("retention.events", raw.Events, app.DefaultEvents)
	r.Audit = v.duration("retention.audit", raw.Audit, app.DefaultAudit)
	r.Sweep = raw.Sweep
	if r.Sweep == "" {
		r.Sweep = app.DefaultSweep
	}
	if _, err := cron.ParseStandard(r.Sweep); err != nil {
		v.fail("retention.sweep", fmt.Sprintf("%q is not a cron spec: %v", r.Sweep, err))
	}
}

func (v *validator) source(key string, r rawSource, publicURL string) *app.Source {
	if !sourceName.MatchString(r.Name) {
		v.fail(key+".name", "must be 1-64 of a-z, 0-9, '_' and '-', starting with a letter or digit")
		return nil
	}
	failed := v.failed()
	switch {
	case r.Provider == "":
		v.fail(key+".provider", fmt.Sprintf("is missing: name the platform, e.g. provider = \"shopify\" (known: %s)", strings.Join(provider.Names(), ", ")))
	case !provider.Known(r.Provider):
		v.fail(key+".provider", fmt.Sprintf("unknown provider %q%s (known: %s)", r.Provider, didYouMean(r.Provider, provider.Names()), strings.Join(provider.Names(), ", ")))
	}
	s := &app.Source{Name: r.Name, Provider: r.Provider, URL: publicURL + "/in/" + r.Name}
	if publicURL == "" {
		s.URL = "/in/" + r.Name
	}
	secrets := v.secrets(key, r)
	set := provider.Settings{
		Secrets:           secrets,
		Tolerance:         v.duration(key+".tolerance", r.Tolerance, provider.DefaultTolerance),
		SignatureHeader:   r.SignatureHeader,
		SignatureEncoding: r.SignatureEncoding,
		SignaturePrefix:   r.SignaturePrefix,
	}
	if r.Provider != "hmac" && (r.SignatureHeader != "" || r.SignatureEncoding != "" || r.SignaturePrefix != "") {
		v.fail(key+".signature_header", "only the hmac provider takes signature_* keys")
	}
	if r.Provider == "hmac" {
		if r.SignatureHeader == "" {
			v.fail(key+".signature_header", "the hmac provider needs the name of the header that carries the signature")
		}
		if e := r.SignatureEncoding; e != "" && e != "hex" && e != "base64" {
			v.fail(key+".signature_encoding", fmt.Sprintf("%q: use \"hex\" or \"base64\"", e))
		}
		if r.ID == "" {
			v.fail(key+".id", "the hmac provider needs an id template, e.g. \"{header.X-Event-Id}\" or \"{body.id}\"")
		}
	}
	if r.Provider == "square" && publicURL == "" {
		v.fail("server.public_url", fmt.Sprintf("source %q (square) signs the notification URL: set public_url to the address Square posts to, without /in/%s", r.Name, r.Name))
	}
	s.ID = v.template(key+".id", r.ID)
	s.Topic = v.template(key+".topic", r.Topic)
	s.Upstream = v.upstream(key, r.Provider, r.Upstream, publicURL) // upstream.go
	s.QuietAfter = v.quietAfter(key, r.QuietAfter)                  // quarantine.go
	if v.failed() > failed || !provider.Known(r.Provider) || len(secrets) == 0 {
		return nil
	}
	verify, err := provider.New(r.Provider, set)
	if err != nil {
		v.fail(key+".secret", err.Error())
		return nil
	}
	s.Verify = verify
	s.Settings = set
	return s
}

func (v *validator) template(key, s string) *fields.Template {
	if s == "" {
		return nil
	}
	t, err := fields.Parse(s)
	if err != nil {
		v.fail(key, err.Error())
	}
	return t
}

// secrets gathers a source's secrets from secret, secrets, secret_env and
// secrets_env. Errors name the key or variable, never a value.
func (v *validator) secrets(key string, r rawSource) [][]byte {
	var out [][]byte
	failed := v.failed()
	add := func(k, s string) {
		if s == "" {
			v.fail(k, "is empty")
			return
		}
		out = append(out, []byte(s))
	}
	fromEnv := func(k, name string) {
		if val := v.env1(k, name); val != "" {
			out = append(out, []byte(val))
		}
	}
	if r.Secret != "" {
		add(key+".secret", r.Secret)
	}
	for i, s := range r.Secrets {
		add(fmt.Sprintf("%s.secrets[%d]", key, i), s)
	}
	if r.SecretEnv != "" {
		fromEnv(key+".secret_env", r.SecretEnv)
	}
	for i, name := range r.SecretsEnv {
		fromEnv(fmt.Sprintf("%s.secrets_env[%d]", key, i), name)
	}
	written := func(k string) bool { return v.isBroken(key + "." + k) } // with a mistake of its own
	if len(out) == 0 && v.failed() == failed && !written("secret") && !written("secrets") && !written("secret_env") && !written("secrets_env") {
		v.fail(key+".secret", "no secret: set secret, secrets, secret_env or secrets_env")
	}
	return out
}

// backup checks the [backup] table; dir defaults to data_dir/backups.
func (v *validator) backup(b *app.BackupConfig, r rawBackup, dataDir string) {
	b.Schedule = r.Schedule
	switch b.Schedule {
	case "":
		b.Schedule = app.DefaultBackupSchedule
	case "off":
		b.Schedule = ""
	}
	if b.Schedule != "" {
		if _, err := cron.ParseStandard(b.Schedule); err != nil {
			v.fail("backup.schedule", fmt.Sprintf("%q is not a cron spec (or \"off\"): %v", b.Schedule, err))
		}
	}
	b.Dir = r.Dir
	if b.Dir == "" {
		b.Dir = filepath.Join(dataDir, app.BackupsDirName)
	}
	b.Keep = app.DefaultBackupKeep
	if r.Keep != nil {
		b.Keep = *r.Keep
		if b.Keep < 1 || b.Keep > 10000 {
			v.fail("backup.keep", "must be between 1 and 10000")
		}
	}
}
