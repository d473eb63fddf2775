// The running config and its reload: which config a server runs with now
// (swapped whole, never edited), when and from which file it was loaded,
// the last config a reload refused, and what a new config changes.

package app

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"hookbox/app/fields"
)

// Running is the config a server runs with: the one it started with, then
// each one a reload applied. Readers load it once per request or pass; a
// reload swaps it whole.
type Running struct {
	cur     atomic.Pointer[Loaded]
	refused atomic.Pointer[Refusal]
}

// Loaded is a config in force: the file it came from and when it was read.
type Loaded struct {
	Config *Config
	Path   string
	At     time.Time
	// Restart names the keys of the file that differ from what runs and
	// apply only at the next start ("server.listen"), sorted.
	Restart []string
}

// NewRunning returns the Running of cfg, loaded at at.
func NewRunning(cfg *Config, at time.Time) *Running {
	r := &Running{}
	r.cur.Store(&Loaded{Config: cfg, Path: cfg.Path, At: at})
	return r
}

// Config returns the config in force.
func (r *Running) Config() *Config { return r.cur.Load().Config }

// Loaded returns the config in force with where and when it was read.
func (r *Running) Loaded() *Loaded { return r.cur.Load() }

// Refused returns the last refused config, nil when the last reload (or
// the start) succeeded.
func (r *Running) Refused() *Refusal { return r.refused.Load() }

// Store puts l in force and forgets any refusal.
func (r *Running) Store(l *Loaded) {
	r.cur.Store(l)
	r.refused.Store(nil)
}

// Refuse records that the config at path was refused at at for err (a
// ConfigError, or several joined): the one in force stays.
func (r *Running) Refuse(path string, at time.Time, err error) *Refusal {
	f := &Refusal{Path: path, At: at, Reasons: ErrorLines(err)}
	r.refused.Store(f)
	return f
}

// ErrorLines splits err into its mistakes (errors.Join joins them), one
// a line.
func ErrorLines(err error) []string {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, ErrorLines(e)...)
		}
		return out
	}
	var out []string
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Change counts what a new config adds, removes and changes of one kind
// of named thing (sources, destinations, routes), by name.
type Change struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
}

// Count is how many names it holds.
func (c Change) Count() int { return len(c.Added) + len(c.Removed) + len(c.Changed) }

// ConfigDiff is what a reload changes: the live parts by name, and the
// keys that apply only at the next start.
type ConfigDiff struct {
	Sources      Change `json:"sources"`
	Destinations Change `json:"destinations"`
	Routes       Change `json:"routes"`
	// Alerts and Retention say whether those tables changed.
	Alerts    bool `json:"alerts_changed"`
	Retention bool `json:"retention_changed"`
	// Restart are the keys that differ but cannot change while serving,
	// sorted; the running values stay (Settle).
	Restart []string `json:"restart_to_apply,omitempty"`
}

// Settle compares next with the config in force, old, and makes next the
// config to run: the parts that cannot change while serving (listen
// addresses, data dir, TLS, body and connection limits, the trusted
// proxies, storage, the status login, backups) are set back to old's, and
// named in the diff's Restart. Everything else of next applies as it is.
// A next that cannot run with old's storage (a destination's timeout the
// running lease does not outlast) is an error, and must not be put in
// force.
func Settle(old, next *Config) (ConfigDiff, error) {
	var d ConfigDiff
	d.Sources = diffNamed(old.Sources, next.Sources, func(s *Source) string { return s.Name }, sourceSame)
	d.Destinations = diffNamed(old.Destinations, next.Destinations, func(d *Destination) string { return d.Name },
		func(a, b *Destination) bool { return reflect.DeepEqual(a, b) })
	d.Routes = diffNamed(old.Routes, next.Routes, func(r *Route) string { return r.Name }, routeSame)
	d.Retention = old.Retention != next.Retention

	o, n := old.Server, next.Server
	fixed := []struct {
		key  string
		same bool
	}{
		{"server.listen", o.Listen == n.Listen},
		{"server.http_listen", o.HTTPListen == n.HTTPListen},
		{"server.data_dir", o.DataDir == n.DataDir},
		{"server.tls", o.TLS == n.TLS && o.CertFile == n.CertFile && o.KeyFile == n.KeyFile &&
			o.Domain == n.Domain && o.ACMEEmail == n.ACMEEmail && o.ACMEDirectory == n.ACMEDirectory},
		{"server.max_body_bytes", o.MaxBodyBytes == n.MaxBodyBytes},
		{"server.max_body_bytes_total", o.MaxBodyBytesTotal == n.MaxBodyBytesTotal},
		{"server.max_connections", o.MaxConnections == n.MaxConnections && o.MaxConnectionsPerIP == n.MaxConnectionsPerIP},
		{"server.trusted_proxies", slices.Equal(o.TrustedProxies, n.TrustedProxies)},
		{"storage", reflect.DeepEqual(old.Storage, next.Storage)},
		{"status", old.Status == next.Status},
		{"backup", old.Backup == next.Backup},
		// The mailer and the log's handler are built at start.
		{"alerts.email_to", slices.Equal(old.Alerts.EmailTo, next.Alerts.EmailTo)},
		{"alerts.email_from", old.Alerts.EmailFrom == next.Alerts.EmailFrom},
		{"alerts.smtp_url_env", old.Alerts.SMTPURL == next.Alerts.SMTPURL},
		{"log", old.Log == next.Log},
	}
	for _, f := range fixed {
		if !f.same {
			d.Restart = append(d.Restart, f.key)
		}
	}
	// What runs keeps the fixed values; public_url changes (the URLs
	// of the sources and the links of alerts are made of it).
	server := old.Server
	server.PublicURL = n.PublicURL
	next.Server, next.Storage, next.Status, next.Backup = server, old.Storage, old.Status, old.Backup
	next.Alerts.EmailTo, next.Alerts.EmailFrom, next.Alerts.SMTPURL = old.Alerts.EmailTo, old.Alerts.EmailFrom, old.Alerts.SMTPURL
	next.Log = old.Log
	d.Alerts = !reflect.DeepEqual(old.Alerts, next.Alerts)
	return d, checkLease(next)
}

// LeaseMargin is how much longer than a send to any destination (its
// timeout) a PostgreSQL lease must last: config loading and reloads
// refuse less.
const LeaseMargin = 5 * time.Second

// checkLease refuses a config on PostgreSQL whose lease some destination's
// timeout reaches: another node would send that delivery again while the
// first send still runs. Loading checks the file's lease; a reload keeps
// the running one.
func checkLease(c *Config) error {
	if c.Storage.Backend != BackendPostgres {
		return nil
	}
	for i, d := range c.Destinations {
		if d.Timeout+LeaseMargin > c.Storage.Lease {
			return &ConfigError{File: c.Path, Key: fmt.Sprintf("destination[%d] (%s).timeout", i, d.Name),
				Reason: fmt.Sprintf("%v is too long for the running storage.lease %v (a lease changes at a restart): a lease must outlast a send by %v",
					d.Timeout, c.Storage.Lease, LeaseMargin)}
		}
	}
	return nil
}

// Empty reports whether the diff changes nothing live.
func (d ConfigDiff) Empty() bool {
	return d.Sources.Count()+d.Destinations.Count()+d.Routes.Count() == 0 && !d.Alerts && !d.Retention
}

// LogAttrs are the diff as the attributes of the reload's log line.
func (d ConfigDiff) LogAttrs() []any {
	attrs := []any{}
	for _, c := range []struct {
		kind string
		ch   Change
	}{{"sources", d.Sources}, {"destinations", d.Destinations}, {"routes", d.Routes}} {
		attrs = append(attrs, c.kind+"_added", len(c.ch.Added), c.kind+"_removed", len(c.ch.Removed), c.kind+"_changed", len(c.ch.Changed))
	}
	attrs = append(attrs, "alerts_changed", d.Alerts, "retention_changed", d.Retention)
	if len(d.Restart) > 0 {
		attrs = append(attrs, "restart_to_apply", strings.Join(d.Restart, ", "))
	}
	return attrs
}

// Lines are the diff as `hookbox reload` prints it, one change a line:
// what was added, removed and changed by kind and name, the tables that
// changed, then the keys that wait for a restart; "nothing changed" when
// the file is the config in force.
func (d ConfigDiff) Lines() []string {
	var out []string
	for _, c := range []struct {
		kind string
		ch   Change
	}{{"source", d.Sources}, {"destination", d.Destinations}, {"route", d.Routes}} {
		for _, what := range []struct {
			verb  string
			names []string
		}{{"added", c.ch.Added}, {"removed", c.ch.Removed}, {"changed", c.ch.Changed}} {
			for _, name := range what.names {
				out = append(out, fmt.Sprintf("%s %s: %s", c.kind, what.verb, name))
			}
		}
	}
	if d.Alerts {
		out = append(out, "alerts changed")
	}
	if d.Retention {
		out = append(out, "retention changed")
	}
	if len(out) == 0 && len(d.Restart) == 0 {
		return []string{"nothing changed"}
	}
	if len(d.Restart) > 0 {
		out = append(out, "waits for a restart (the running value stays): "+strings.Join(d.Restart, ", "))
	}
	return out
}

// diffNamed compares two lists of named things by name.
func diffNamed[T any](old, next []T, name func(T) string, same func(a, b T) bool) Change {
	var c Change
	byName := make(map[string]T, len(old))
	for _, o := range old {
		byName[name(o)] = o
	}
	seen := make(map[string]bool, len(next))
	for _, n := range next {
		k := name(n)
		seen[k] = true
		o, ok := byName[k]
		switch {
		case !ok:
			c.Added = append(c.Added, k)
		case !same(o, n):
			c.Changed = append(c.Changed, k)
		}
	}
	for _, o := range old {
		if !seen[name(o)] {
			c.Removed = append(c.Removed, name(o))
		}
	}
	return c
}

// sourceSame compares two sources by what their config says (their
// verifiers are built from it).
func sourceSame(a, b *Source) bool {
	return a.Provider == b.Provider && a.URL == b.URL && reflect.DeepEqual(a.Settings, b.Settings) &&
		templateText(a.ID) == templateText(b.ID) && templateText(a.Topic) == templateText(b.Topic) &&
		reflect.DeepEqual(a.Upstream, b.Upstream)
}

// routeSame compares two routes by what their config says (their rules
// are compiled from it).
func routeSame(a, b *Route) bool {
	return a.Source == b.Source && slices.Equal(a.Topics, b.Topics) && slices.Equal(a.To, b.To) &&
		templateText(a.Key) == templateText(b.Key) && a.Debounce == b.Debounce && a.RateLimit == b.RateLimit &&
		ruleText(a.Filter) == ruleText(b.Filter) && ruleText(a.Transform) == ruleText(b.Transform) &&
		templateText(a.OrderKey) == templateText(b.OrderKey)
}

// templateText is a template as configured, "" for none.
func templateText(t *fields.Template) string {
	if t == nil {
		return ""
	}
	return t.String()
}

// ruleText is a filter's or transform's expression, "" for none.
func ruleText(r fmt.Stringer) string {
	if r == nil {
		return ""
	}
	return r.String()
}
