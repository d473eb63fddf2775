package app

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"time"

	"hookbox/app/fields"
	"hookbox/app/provider"
)

// Config is hookbox's whole configuration, loaded from one TOML file and
// validated before anything starts.
type Config struct {
	Path         string
	Server       ServerConfig
	Status       StatusConfig
	Sources      []*Source
	Destinations []*Destination
	Routes       []*Route
	Retention    RetentionConfig
	// Quarantine bounds each source's quarantine ([quarantine]).
	Quarantine QuarantineLimits
	Alerts     AlertsConfig
	Backup     BackupConfig
	Storage    StorageConfig
	Log        LogConfig
}

// StatusConfig is the [status] table: the login of the status page and
// the admin API.
type StatusConfig struct {
	User     string
	Password string // empty: one is generated at first start
	// MetricsPublic serves /metrics without a login.
	MetricsPublic bool
}

// AlertsConfig is the [alerts] table.
type AlertsConfig struct {
	// DeadLettersOver is the number of dead deliveries above which an alert
	// goes out.
	DeadLettersOver int
	// URL receives Slack-compatible JSON ({"text": …}); empty: no alerts.
	URL string
	// Check is the cron spec of the check.
	Check string
	// FailingFor is how long a destination fails without a success before
	// a destination_failing alert goes out (0: never).
	FailingFor time.Duration
	// EmailTo receives every alert by email as well (empty: none), from
	// EmailFrom, through the SMTP server SMTPURL names (read from the
	// variable alerts.smtp_url_env names: it holds a password).
	EmailTo   []string
	EmailFrom string
	SMTPURL   string
}

// DefaultFailingFor is [alerts] failing_for's default.
const DefaultFailingFor = 10 * time.Minute

// Enabled reports whether any alert channel is configured.
func (c AlertsConfig) Enabled() bool { return c.URL != "" || len(c.EmailTo) > 0 }

// Destination is one [[destination]]: an endpoint of the merchant's.
type Destination struct {
	Name string
	// URL is where its deliveries are POSTed; "" for a command destination.
	URL string
	// Command, when set (instead of URL), is the program and arguments run
	// for each attempt: no shell, the body on standard input, the metadata
	// in HOOKBOX_* variables (see CommandEnv). Command[0] is an absolute
	// path, checked executable at load.
	Command []string
	// Env is what a command's environment holds besides PATH and the
	// HOOKBOX_* variables: each "NAME=value", resolved at load from
	// [[destination]] env (a name takes hookbox's own value). Secrets may be
	// among them: never logged or shown.
	Env []string
	// Secret, when set, signs requests with Standard Webhooks headers.
	Secret      []byte
	Timeout     time.Duration
	Retry       []time.Duration
	Headers     map[string]string
	Concurrency int
	// Rate, when set, spaces the starts of its attempts (rate = "10/s").
	Rate Rate
	// SignatureHeaders names the headers hookbox signs under:
	// SignatureHeadersStandard (webhook-*) or SignatureHeadersSvix (also
	// svix-*, which Svix's libraries read first).
	SignatureHeaders string
	// ForwardSignatures sends the provider's signature headers along
	// (Stripe-Signature, X-Shopify-Hmac-Sha256, …): an app that checks
	// them keeps working. A destination that holds them can also send a
	// genuine event back to hookbox under a new id (docs/SECURITY.md).
	ForwardSignatures bool
}

// The values of [[destination]] signature_headers.
const (
	SignatureHeadersStandard = "standard"
	SignatureHeadersSvix     = "svix"
)

// Route is one [[route]]: events of Source whose topic matches one of
// Topics (all when empty) go to the destinations To.
type Route struct {
	// Name identifies the route in stats and in pending deliveries.
	Name   string
	Source string
	Topics []string
	To     []string
	// Key, when set, debounces per entity: the template names the entity.
	Key *fields.Template
	// Debounce is how long a key's pending delivery gathers updates.
	Debounce time.Duration
	// RateLimit caps the sends per key in a sliding window (N 0: none).
	RateLimit RateLimit
	// Filter, when set, decides whether the route takes an event.
	Filter Filter
	// Transform, when set, makes the body its destinations receive.
	Transform Transform
	// OrderKey, when set, names the group whose deliveries go to each
	// destination one at a time, in accept order.
	OrderKey *fields.Template
}

// Matches reports whether an event of source with topic takes this route.
func (r *Route) Matches(source, topic string) bool {
	if r.Source != source {
		return false
	}
	if len(r.Topics) == 0 {
		return true
	}
	for _, g := range r.Topics {
		if Glob(g, topic) {
			return true
		}
	}
	return false
}

// DestinationsFor returns the deliveries the routes without a key open
// for an event of source with topic that every filter takes: each
// destination once, for the first route in config order that names it,
// without order keys (they need the event). The receiver plans with the
// event itself (receive.Receiver.plan: filters, keys, order keys); this is the
// most an event of that topic can be sent to at once.
func (c *Config) DestinationsFor(source, topic string) []Direct {
	var out []Direct
	for _, r := range c.Routes {
		if r.Key != nil || !r.Matches(source, topic) {
			continue
		}
		for _, d := range r.To {
			out = AddDirect(out, Direct{Dest: d, Route: r.Name})
		}
	}
	return out
}

// AddDirect appends d to ds unless ds already goes to d.Dest.
func AddDirect(ds []Direct, d Direct) []Direct {
	for _, x := range ds {
		if x.Dest == d.Dest {
			return ds
		}
	}
	return append(ds, d)
}

// The routing rules a route may carry besides its source and topics: a
// filter that decides whether the route takes an event, and a transform
// that makes the body its destinations receive. The domain only calls
// them; app/rules compiles them from CEL at config load.

// RuleInput is what a route's rules see of one event, as received.
type RuleInput struct {
	Source string
	Topic  string
	ID     string
	Header []HeaderField
	Body   []byte
	// Parsed is the rules engine's own form of Body and Header, made by
	// the first rule that reads them and kept for the event's other
	// routes, so the body is parsed once however many routes. Only the
	// engine reads or sets it.
	Parsed any
}

// Filter decides whether a route takes an event.
type Filter interface {
	// Match reports whether the route takes in. An error (a missing
	// field, a wrong type, the cost limit) means it does not; the caller
	// counts it.
	Match(in *RuleInput) (bool, error)
	// String is the expression as configured.
	String() string
}

// Transform makes the body a route's destinations receive.
type Transform interface {
	// Apply returns the body for in and its Content-Type, at most max
	// bytes long; an error says why none can be made.
	Apply(in *RuleInput, max int) (body []byte, contentType string, err error)
	// String is the expression as configured.
	String() string
}

// Direct is a delivery an accept opens at once: to Dest, for the route
// Route (the first in the config that takes the event and names Dest),
// in the order group OrderKey of that route ("" when the route has no
// order_key).
type Direct struct {
	Dest     string
	Route    string
	OrderKey string
}

// DirectTo returns deliveries to dests with no route or order key: what a
// plan held before routes had rules, for tests and tools.
func DirectTo(dests ...string) []Direct {
	out := make([]Direct, len(dests))
	for i, d := range dests {
		out[i] = Direct{Dest: d}
	}
	return out
}

// DestinationByName returns the destination called name, or nil.
func (c *Config) DestinationByName(name string) *Destination {
	for _, d := range c.Destinations {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// ServerConfig is the [server] table.
type ServerConfig struct {
	Listen       string
	PublicURL    string
	DataDir      string
	MaxBodyBytes int
	// MaxBodyBytesTotal bounds what the request bodies being read or
	// handled hold at once, all connections together, past the first
	// 8 KiB of each (which every connection may hold).
	MaxBodyBytesTotal int64

	// TLS says how Listen is served: plain HTTP, or HTTPS with a
	// certificate from files or from an ACME CA.
	TLS TLSMode
	// CertFile and KeyFile are the PEM pair of TLSFiles; they are read
	// again when they change, so an external renewer needs no restart.
	CertFile, KeyFile string
	// Domain is the name TLSACME gets a certificate for.
	Domain string
	// ACMEEmail is given to the CA for expiry notices (may be empty).
	ACMEEmail string
	// ACMEDirectory is the CA's ACME directory URL.
	ACMEDirectory string
	// HTTPListen, with TLS, serves plain HTTP that answers ACME HTTP-01
	// challenges and redirects everything else to HTTPS (empty: none).
	HTTPListen string

	// TrustedProxies are the peers whose X-Forwarded-For and
	// X-Forwarded-Proto count (none by default: the socket's address is
	// the client's, and only TLS on listen means https).
	TrustedProxies []netip.Prefix
	// MaxConnections bounds the connections open on listen at once.
	MaxConnections int
	// MaxConnectionsPerIP bounds those from one address (an IPv6 /64);
	// trusted proxies are exempt (0: no per-address bound).
	MaxConnectionsPerIP int
}

// Trusted reports whether a is one of the trusted proxies.
func (s *ServerConfig) Trusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range s.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// LocalBase returns http://host:port for reaching the server on Listen
// from this machine: an unspecified host (0.0.0.0, ::, empty) becomes
// 127.0.0.1. The command line's sign and bench use it.
func (s *ServerConfig) LocalBase() string {
	host, port, _ := net.SplitHostPort(s.Listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// TLSMode is how the main listener is served.
type TLSMode int

// The TLS modes of [server].
const (
	TLSNone  TLSMode = iota // plain HTTP, e.g. behind a reverse proxy
	TLSFiles                // cert_file and key_file
	TLSACME                 // a certificate for domain from an ACME CA
)

func (m TLSMode) String() string {
	switch m {
	case TLSFiles:
		return "files"
	case TLSACME:
		return "acme"
	}
	return "none"
}

// BackupConfig is the [backup] table: scheduled hot copies of the data file.
type BackupConfig struct {
	// Schedule is the cron spec of the backups; empty means none.
	Schedule string
	// Dir receives the copies (hookbox-NNNNNN-YYYYMMDD-HHMMSS.db: a count, then UTC).
	Dir string
	// Keep is how many copies stay; older ones are deleted.
	Keep int
}

// RetentionConfig is the [retention] table.
type RetentionConfig struct {
	// EventIDs is how long an event id is remembered for deduplication.
	EventIDs time.Duration
	// Events is how long a stored event (body and headers) is kept.
	Events time.Duration
	// Audit is how long an audit log entry is kept.
	Audit time.Duration
	// Sweep is the cron spec of the job that forgets what expired.
	Sweep string
}

// Source is one [[source]]: a named inbound endpoint at /in/{name}.
type Source struct {
	Name     string
	Provider string
	// Verify checks a request's signature and reads the provider's id rules.
	Verify provider.Verifier
	// Settings are what Verify was built from; `hookbox sign` signs with them.
	Settings provider.Settings
	// ID and Topic, when set, override the provider's rules.
	ID    *fields.Template
	Topic *fields.Template
	// URL is the public URL senders post to (public_url + /in/name).
	URL string
	// Upstream, when set, is what hookbox checks on the provider's side
	// ([source.upstream], app/upstream).
	Upstream *Upstream
	// QuietAfter, when not zero, is how long the source may accept nothing
	// before a source_quiet alert goes out (quiet_after).
	QuietAfter time.Duration
}

// Defaults for keys a config may leave out.
const (
	DefaultListen       = "127.0.0.1:8080"
	DefaultDataDir      = "./data"
	DefaultMaxBodyBytes = 1 << 20
	DefaultEventIDs     = 720 * time.Hour
	DefaultEvents       = 720 * time.Hour
	DefaultAudit        = 8760 * time.Hour
	DefaultSweep        = "@hourly"
	DefaultTimeout      = 15 * time.Second
	DefaultConcurrency  = 8
	DefaultAlertCheck   = "@every 1m"
	DefaultStatusUser   = "admin"
	// DefaultMaxBodyBytesTotal holds 32 bodies of the default largest at
	// once (each may take up to twice its size), far more than webhooks
	// need (they are mostly a few KiB), and far less than a small VPS has.
	DefaultMaxBodyBytesTotal = 64 << 20
	// DefaultTLSListen is the listen address when TLS is on and listen is not set.
	DefaultTLSListen = ":443"
	// DefaultHTTPListen is the challenge and redirect listener of ACME mode.
	DefaultHTTPListen = ":80"
	// DefaultACMEDirectory is Let's Encrypt's production directory.
	DefaultACMEDirectory  = "https://acme-v02.api.letsencrypt.org/directory"
	DefaultBackupSchedule = "@daily"
	DefaultBackupKeep     = 7
	// BackupsDirName is the default backup directory inside data_dir.
	BackupsDirName = "backups"
)

// Defaults of the keys that bound connections.
const (
	// DefaultMaxConnections leaves room for thousands of slow clients at
	// about 25 KiB each (read buffer, goroutine, request state).
	DefaultMaxConnections = 4096
	// DefaultMaxConnectionsPerIP is far above what a sender's burst opens
	// and far below what one host needs to fill MaxConnections.
	DefaultMaxConnectionsPerIP = 256
)

// ConfigError is a problem with one key of a config file; it prints as
// "file:line: key: reason" and never contains a secret.
type ConfigError struct {
	File string
	// Line is where in File the key is written, from 1; 0 when unknown
	// (a key left out, a value from the environment).
	Line   int
	Key    string
	Reason string
}

func (e *ConfigError) Error() string {
	file := e.File
	if e.Line > 0 {
		file = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", file, e.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", file, e.Key, e.Reason)
}

// SourceByName returns the source called name, or nil.
func (c *Config) SourceByName(name string) *Source {
	for _, s := range c.Sources {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// ShortDuration writes d without zero minutes and seconds ("1h", "15m").
func ShortDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

// LogConfig is the [log] table: how serve writes its log to stderr.
type LogConfig struct {
	// Format is LogText (logfmt: key=value) or LogJSON (one JSON object a line).
	Format string
	// Level is the least severe level written.
	Level slog.Level
}

// The values of [log] format.
const (
	LogText = "text"
	LogJSON = "json"
)
