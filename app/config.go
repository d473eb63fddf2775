package app

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/robfig/cron/v3"

	"hookbox/app/provider"
	"hookbox/app/template"
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
	Alerts       AlertsConfig
	Backup       BackupConfig
	Storage      StorageConfig
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
}

// Destination is one [[destination]]: an endpoint of the merchant's.
type Destination struct {
	Name string
	URL  string
	// Secret, when set, signs requests with Standard Webhooks headers.
	Secret      []byte
	Timeout     time.Duration
	Retry       []time.Duration
	Headers     map[string]string
	Concurrency int
}

// Route is one [[route]]: events of Source whose topic matches one of
// Topics (all when empty) go to the destinations To.
type Route struct {
	// Name identifies the route in stats and in pending deliveries.
	Name   string
	Source string
	Topics []string
	To     []string
	// Key, when set, debounces per entity: the template names the entity.
	Key *template.Template
	// Debounce is how long a key's pending delivery gathers updates.
	Debounce time.Duration
	// RateLimit caps the sends per key in a sliding window (N 0: none).
	RateLimit RateLimit
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

// DestinationsFor returns the names of the destinations the routes without
// a key send an event of source with topic to, each once, in config order.
func (c *Config) DestinationsFor(source, topic string) []string {
	var out []string
	for _, r := range c.Routes {
		if r.Key != nil || !r.Matches(source, topic) {
			continue
		}
		for _, d := range r.To {
			if !slices.Contains(out, d) {
				out = append(out, d)
			}
		}
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
	ID    *template.Template
	Topic *template.Template
	// URL is the public URL senders post to (public_url + /in/name).
	URL string
}

// Defaults for keys a config may leave out.
const (
	DefaultListen       = "127.0.0.1:8080"
	DefaultDataDir      = "./data"
	DefaultMaxBodyBytes = 1 << 20
	DefaultEventIDs     = 720 * time.Hour
	DefaultEvents       = 720 * time.Hour
	DefaultSweep        = "@hourly"
	DefaultTimeout      = 15 * time.Second
	DefaultConcurrency  = 8
	DefaultAlertCheck   = "@every 1m"
	DefaultStatusUser   = "admin"
	maxMaxBodyBytes     = 64 << 20
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
	maxMaxConnections          = 1 << 20
)

// ConfigError is a problem with one key of a config file; it prints as
// "file: key: reason" and never contains a secret.
type ConfigError struct {
	File   string
	Key    string
	Reason string
}

func (e *ConfigError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", e.File, e.Reason)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Key, e.Reason)
}

// The raw TOML shapes. Durations are strings so that errors can name the key.
type rawConfig struct {
	Server      rawServer        `toml:"server"`
	Status      rawStatus        `toml:"status"`
	Source      []rawSource      `toml:"source"`
	Destination []rawDestination `toml:"destination"`
	Route       []rawRoute       `toml:"route"`
	Retention   rawRetention     `toml:"retention"`
	Alerts      rawAlerts        `toml:"alerts"`
	Backup      rawBackup        `toml:"backup"`
	Storage     rawStorage       `toml:"storage"`
}

type rawBackup struct {
	Schedule string `toml:"schedule"`
	Dir      string `toml:"dir"`
	Keep     *int   `toml:"keep"`
}

type rawStatus struct {
	User          string `toml:"user"`
	Password      string `toml:"password"`
	PasswordEnv   string `toml:"password_env"`
	MetricsPublic bool   `toml:"metrics_public"`
}

type rawAlerts struct {
	DeadLettersOver *int   `toml:"dead_letters_over"`
	URL             string `toml:"url"`
	URLEnv          string `toml:"url_env"`
	Check           string `toml:"check"`
}

type rawDestination struct {
	Name        string            `toml:"name"`
	URL         string            `toml:"url"`
	Secret      string            `toml:"secret"`
	SecretEnv   string            `toml:"secret_env"`
	Timeout     string            `toml:"timeout"`
	Retry       *[]string         `toml:"retry"`
	Headers     map[string]string `toml:"headers"`
	Concurrency *int              `toml:"concurrency"`
}

type rawRoute struct {
	Name      string   `toml:"name"`
	Source    string   `toml:"source"`
	Topics    []string `toml:"topics"`
	To        []string `toml:"to"`
	Key       string   `toml:"key"`
	Debounce  string   `toml:"debounce"`
	RateLimit string   `toml:"rate_limit"`
}

// DefaultRetry is the retry schedule of a destination that sets none.
var DefaultRetry = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 8 * time.Hour}

type rawServer struct {
	Listen       string `toml:"listen"`
	PublicURL    string `toml:"public_url"`
	DataDir      string `toml:"data_dir"`
	MaxBodyBytes *int   `toml:"max_body_bytes"`

	CertFile      string  `toml:"cert_file"`
	KeyFile       string  `toml:"key_file"`
	Domain        string  `toml:"domain"`
	ACMEEmail     string  `toml:"acme_email"`
	ACMEDirectory string  `toml:"acme_directory"`
	HTTPListen    *string `toml:"http_listen"`

	TrustedProxies      []string `toml:"trusted_proxies"`
	MaxConnections      *int     `toml:"max_connections"`
	MaxConnectionsPerIP *int     `toml:"max_connections_per_ip"`
}

type rawSource struct {
	Name              string   `toml:"name"`
	Provider          string   `toml:"provider"`
	Secret            string   `toml:"secret"`
	Secrets           []string `toml:"secrets"`
	SecretEnv         string   `toml:"secret_env"`
	SecretsEnv        []string `toml:"secrets_env"`
	Tolerance         string   `toml:"tolerance"`
	ID                string   `toml:"id"`
	Topic             string   `toml:"topic"`
	SignatureHeader   string   `toml:"signature_header"`
	SignatureEncoding string   `toml:"signature_encoding"`
	SignaturePrefix   string   `toml:"signature_prefix"`
}

type rawRetention struct {
	EventIDs string `toml:"event_ids"`
	Events   string `toml:"events"`
	Sweep    string `toml:"sweep"`
}

var sourceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// LoadConfig reads and validates the config file at path. lookupEnv resolves
// *_env keys (os.LookupEnv when nil).
func LoadConfig(path string, lookupEnv func(string) (string, bool)) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Reason: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
	}
	return ParseConfig(path, string(data), lookupEnv)
}

// ParseConfig validates the TOML text data as if read from file.
func ParseConfig(file, data string, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	var raw rawConfig
	md, err := toml.Decode(data, &raw)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			key := pe.LastKey
			if key == "" {
				key = fmt.Sprintf("line %d", pe.Position.Line)
			} else {
				key = fmt.Sprintf("line %d, %s", pe.Position.Line, key)
			}
			return nil, &ConfigError{File: file, Key: key, Reason: pe.Message}
		}
		return nil, &ConfigError{File: file, Reason: err.Error()}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return nil, &ConfigError{File: file, Key: und[0].String(), Reason: "unknown key"}
	}
	if err := adjustPaths(file, &raw, lookupEnv); err != nil { // config_paths.go
		return nil, err
	}
	v := validator{file: file, env: lookupEnv}
	cfg := &Config{Path: file}
	v.server(&cfg.Server, raw.Server)
	v.retention(&cfg.Retention, raw.Retention)
	v.backup(&cfg.Backup, raw.Backup, cfg.Server.DataDir)
	seen := map[string]bool{}
	for i, rs := range raw.Source {
		key := fmt.Sprintf("source[%d]", i)
		if rs.Name != "" {
			key = fmt.Sprintf("source[%d] (%s)", i, rs.Name)
		}
		if seen[rs.Name] && rs.Name != "" {
			v.fail(key+".name", "duplicate source name")
			continue
		}
		seen[rs.Name] = true
		if s := v.source(key, rs, cfg.Server.PublicURL); s != nil {
			cfg.Sources = append(cfg.Sources, s)
		}
	}
	v.status(&cfg.Status, raw.Status)
	v.alerts(&cfg.Alerts, raw.Alerts)
	dseen := map[string]bool{}
	for i, rd := range raw.Destination {
		key := fmt.Sprintf("destination[%d]", i)
		if rd.Name != "" {
			key = fmt.Sprintf("destination[%d] (%s)", i, rd.Name)
		}
		if dseen[rd.Name] && rd.Name != "" {
			v.fail(key+".name", "duplicate destination name")
			continue
		}
		dseen[rd.Name] = true
		if d := v.destination(key, rd); d != nil {
			cfg.Destinations = append(cfg.Destinations, d)
		}
	}
	rseen := map[string]bool{}
	for i, rr := range raw.Route {
		r := v.route(fmt.Sprintf("route[%d]", i), rr, cfg)
		if r.Name == "" {
			r.Name = fmt.Sprintf("route-%d", i+1)
		}
		if rseen[r.Name] {
			v.fail(fmt.Sprintf("route[%d].name", i), fmt.Sprintf("duplicate route name %q", r.Name))
		}
		rseen[r.Name] = true
		cfg.Routes = append(cfg.Routes, r)
	}
	v.storage(cfg, raw.Storage, raw.Backup.Schedule)
	v.idsOutlastDeliveries(cfg)
	if v.err != nil {
		return nil, v.err
	}
	return cfg, nil
}

// idsOutlastDeliveries refuses a retention.event_ids shorter than the
// longest an event can be on its way: held by a route's debounce window
// and rate limit, then retried by a destination to the end of its
// schedule. A sender that resends an id hookbox already forgot gets it
// accepted, and the event delivered twice.
func (v *validator) idsOutlastDeliveries(cfg *Config) {
	if v.err != nil {
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
				why = fmt.Sprintf("destination %q retries for up to %s (%s)", d.Name, shortDuration(d.RetryHorizon()), d.scheduleText())
				if hold > 0 {
					held := "debounce " + shortDuration(r.Debounce)
					if r.RateLimit.Window > 0 {
						held += " plus one rate_limit window of " + shortDuration(r.RateLimit.Window)
					}
					why = fmt.Sprintf("route %q holds an event up to %s (%s), then %s", r.Name, shortDuration(hold), held, why)
				}
			}
		}
	}
	if ids := cfg.Retention.EventIDs; ids < longest {
		v.fail("retention.event_ids", fmt.Sprintf("%s is shorter than a delivery can take: %s; a sender that resends the event's id after hookbox forgot it would get it accepted and delivered twice. Set event_ids to at least %s",
			shortDuration(ids), why, shortDuration(longest.Truncate(time.Minute)+time.Minute)))
	}
}

// retryJitter is the most jitter stretches a retry step (see jitter).
const retryJitter = 0.2

// RetryHorizon is the longest a delivery to d can keep retrying: every
// step of its schedule stretched by the jitter, and every attempt taking
// its whole timeout.
func (d *Destination) RetryHorizon() time.Duration {
	var steps time.Duration
	for _, r := range d.Retry {
		steps += r
	}
	return time.Duration(float64(steps)*(1+retryJitter)) + time.Duration(len(d.Retry)+1)*d.Timeout
}

// scheduleText says what RetryHorizon adds up.
func (d *Destination) scheduleText() string {
	attempts := fmt.Sprintf("%d attempts of up to %s", len(d.Retry)+1, shortDuration(d.Timeout))
	if len(d.Retry) == 0 {
		return "no retry, one attempt of up to " + shortDuration(d.Timeout)
	}
	steps := make([]string, len(d.Retry))
	for i, r := range d.Retry {
		steps[i] = shortDuration(r)
	}
	return fmt.Sprintf("retry %s with %d%% jitter, and %s", strings.Join(steps, ", "), int(retryJitter*100), attempts)
}

// shortDuration writes d without zero minutes and seconds ("1h", "15m").
func shortDuration(d time.Duration) string {
	s := d.String()
	if t, ok := strings.CutSuffix(s, "m0s"); ok {
		s = t + "m"
	}
	if t, ok := strings.CutSuffix(s, "h0m"); ok {
		s = t + "h"
	}
	return s
}

func (v *validator) status(s *StatusConfig, r rawStatus) {
	s.User = r.User
	if s.User == "" {
		s.User = DefaultStatusUser
	}
	s.Password = r.Password
	s.MetricsPublic = r.MetricsPublic
	if r.PasswordEnv != "" {
		s.Password = v.env1("status.password_env", r.PasswordEnv)
	}
}

func (v *validator) alerts(a *AlertsConfig, r rawAlerts) {
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
		a.Check = DefaultAlertCheck
	}
	if _, err := cron.ParseStandard(a.Check); err != nil {
		v.fail("alerts.check", fmt.Sprintf("%q is not a cron spec: %v", a.Check, err))
	}
}

func httpURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// env1 reads one environment variable named by key, which must be set.
func (v *validator) env1(key, name string) string {
	val, ok := v.env(name)
	switch {
	case !ok:
		v.fail(key, fmt.Sprintf("environment variable %s is not set", name))
	case val == "":
		v.fail(key, fmt.Sprintf("environment variable %s is empty", name))
	}
	return val
}

func (v *validator) destination(key string, r rawDestination) *Destination {
	if !sourceName.MatchString(r.Name) {
		v.fail(key+".name", "must be 1-64 of a-z, 0-9, '_' and '-', starting with a letter or digit")
		return nil
	}
	d := &Destination{Name: r.Name, URL: r.URL, Headers: r.Headers, Concurrency: DefaultConcurrency, Retry: DefaultRetry}
	if u, err := url.Parse(r.URL); err != nil || !httpURL(r.URL) || u.User != nil {
		v.fail(key+".url", "must be an absolute http(s) URL without user:password (put credentials in headers)")
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
	d.Timeout = v.duration(key+".timeout", r.Timeout, DefaultTimeout)
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
	for name, value := range r.Headers {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			v.fail(key+".headers", fmt.Sprintf("%q is not a header name", name))
		} else if strings.ContainsAny(value, "\r\n\x00") {
			v.fail(key+".headers."+name, "a header value cannot hold a line break or NUL")
		}
	}
	return d
}

func (v *validator) route(key string, r rawRoute, cfg *Config) *Route {
	if cfg.SourceByName(r.Source) == nil {
		v.fail(key+".source", fmt.Sprintf("no [[source]] named %q", r.Source))
	}
	if len(r.To) == 0 {
		v.fail(key+".to", "names no destination")
	}
	for i, name := range r.To {
		if cfg.DestinationByName(name) == nil {
			v.fail(fmt.Sprintf("%s.to[%d]", key, i), fmt.Sprintf("no [[destination]] named %q", name))
		}
	}
	for i, g := range r.Topics {
		if g == "" {
			v.fail(fmt.Sprintf("%s.topics[%d]", key, i), "is empty")
		}
	}
	route := &Route{Name: r.Name, Source: r.Source, Topics: r.Topics, To: r.To}
	if r.Name != "" && !sourceName.MatchString(r.Name) {
		v.fail(key+".name", "must be 1-64 of a-z, 0-9, '_' and '-', starting with a letter or digit")
	}
	route.Key = v.template(key+".key", r.Key)
	if r.Debounce != "" {
		route.Debounce = v.duration(key+".debounce", r.Debounce, 0)
	}
	if r.RateLimit != "" {
		rl, err := ParseRateLimit(r.RateLimit)
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
	return route
}

// validator collects the first error; later checks become no-ops.
type validator struct {
	file string
	env  func(string) (string, bool)
	err  error
}

func (v *validator) fail(key, reason string) {
	if v.err == nil {
		v.err = &ConfigError{File: v.file, Key: key, Reason: reason}
	}
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

func (v *validator) server(s *ServerConfig, r rawServer) {
	s.Listen = r.Listen
	if s.Listen == "" {
		s.Listen = DefaultListen
		if r.Domain != "" || r.CertFile != "" || r.KeyFile != "" {
			s.Listen = DefaultTLSListen
		}
	}
	if _, port, err := net.SplitHostPort(s.Listen); err != nil || port == "" {
		v.fail("server.listen", fmt.Sprintf("%q is not host:port", s.Listen))
	}
	v.tls(s, r)
	if r.PublicURL != "" {
		u, err := url.Parse(r.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			v.fail("server.public_url", fmt.Sprintf("%q is not an absolute http(s) URL", r.PublicURL))
		} else if s.TLS != TLSNone && u.Scheme != "https" {
			v.fail("server.public_url", fmt.Sprintf("%q: with TLS on, senders reach hookbox over https", r.PublicURL))
		}
		s.PublicURL = strings.TrimRight(r.PublicURL, "/")
	} else if s.TLS == TLSACME {
		// The name the certificate is for is where senders post to.
		s.PublicURL = "https://" + s.Domain
		if _, port, err := net.SplitHostPort(s.Listen); err == nil && port != "443" && port != "https" {
			s.PublicURL = "https://" + net.JoinHostPort(s.Domain, port)
		}
	}
	s.DataDir = r.DataDir
	if s.DataDir == "" {
		s.DataDir = DefaultDataDir
	}
	s.MaxBodyBytes = DefaultMaxBodyBytes
	if r.MaxBodyBytes != nil {
		s.MaxBodyBytes = *r.MaxBodyBytes
		if s.MaxBodyBytes <= 0 || s.MaxBodyBytes > maxMaxBodyBytes {
			v.fail("server.max_body_bytes", fmt.Sprintf("must be between 1 and %d", maxMaxBodyBytes))
		}
	}
	v.edge(s, r)
}

// edge checks the keys that bound what peers get: connections, and whose
// forwarded headers count.
func (v *validator) edge(s *ServerConfig, r rawServer) {
	for i, p := range r.TrustedProxies {
		key := fmt.Sprintf("server.trusted_proxies[%d]", i)
		if pfx, err := netip.ParsePrefix(p); err == nil {
			switch {
			case pfx != pfx.Masked():
				v.fail(key, fmt.Sprintf("%q has bits set past its /%d: write %s", p, pfx.Bits(), pfx.Masked()))
			case pfx.Addr().Is4In6() && pfx.Bits() < 96:
				v.fail(key, fmt.Sprintf("%q: write IPv4 ranges as IPv4", p))
			case pfx.Addr().Is4In6(): // connections from IPv4 peers are matched unmapped
				pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
			}
			s.TrustedProxies = append(s.TrustedProxies, pfx)
		} else if a, err := netip.ParseAddr(p); err == nil && a.Zone() == "" {
			a = a.Unmap()
			s.TrustedProxies = append(s.TrustedProxies, netip.PrefixFrom(a, a.BitLen()))
		} else {
			v.fail(key, fmt.Sprintf("%q is not an IP address or a CIDR range (e.g. \"127.0.0.1\", \"10.0.0.0/8\", \"::1\")", p))
		}
	}
	s.MaxConnections = DefaultMaxConnections
	if r.MaxConnections != nil {
		s.MaxConnections = *r.MaxConnections
		if s.MaxConnections < 1 || s.MaxConnections > maxMaxConnections {
			v.fail("server.max_connections", fmt.Sprintf("must be between 1 and %d", maxMaxConnections))
		}
	}
	s.MaxConnectionsPerIP = min(DefaultMaxConnectionsPerIP, s.MaxConnections)
	if r.MaxConnectionsPerIP != nil {
		s.MaxConnectionsPerIP = *r.MaxConnectionsPerIP
		if s.MaxConnectionsPerIP < 0 || s.MaxConnectionsPerIP > s.MaxConnections {
			v.fail("server.max_connections_per_ip", fmt.Sprintf("must be between 0 (no per-address bound) and server.max_connections (%d)", s.MaxConnections))
		}
	}
}

func (v *validator) retention(r *RetentionConfig, raw rawRetention) {
	r.EventIDs = v.duration("retention.event_ids", raw.EventIDs, DefaultEventIDs)
	r.Events = v.duration("retention.events", raw.Events, DefaultEvents)
	r.Sweep = raw.Sweep
	if r.Sweep == "" {
		r.Sweep = DefaultSweep
	}
	if _, err := cron.ParseStandard(r.Sweep); err != nil {
		v.fail("retention.sweep", fmt.Sprintf("%q is not a cron spec: %v", r.Sweep, err))
	}
}

func (v *validator) source(key string, r rawSource, publicURL string) *Source {
	if !sourceName.MatchString(r.Name) {
		v.fail(key+".name", "must be 1-64 of a-z, 0-9, '_' and '-', starting with a letter or digit")
		return nil
	}
	if !provider.Known(r.Provider) {
		v.fail(key+".provider", fmt.Sprintf("unknown provider %q (known: %s)", r.Provider, strings.Join(provider.Names(), ", ")))
		return nil
	}
	s := &Source{Name: r.Name, Provider: r.Provider, URL: publicURL + "/in/" + r.Name}
	if publicURL == "" {
		s.URL = "/in/" + r.Name
	}
	secrets := v.secrets(key, r)
	if v.err != nil {
		return nil
	}
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
	if v.err != nil {
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

func (v *validator) template(key, s string) *template.Template {
	if s == "" {
		return nil
	}
	t, err := template.Parse(s)
	if err != nil {
		v.fail(key, err.Error())
	}
	return t
}

// secrets gathers a source's secrets from secret, secrets, secret_env and
// secrets_env. Errors name the key or variable, never a value.
func (v *validator) secrets(key string, r rawSource) [][]byte {
	var out [][]byte
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
	if len(out) == 0 && v.err == nil {
		v.fail(key+".secret", "no secret: set secret, secrets, secret_env or secrets_env")
	}
	return out
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

// hostLabel is one label of a DNS name: letters, digits and inner hyphens.
var hostLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// validDomain reports whether s is a DNS name a public CA can issue for:
// two labels at least (autocert refuses single-label names), no IP address,
// no wildcard, no trailing dot.
func validDomain(s string) bool {
	if len(s) > 253 || net.ParseIP(s) != nil {
		return false
	}
	labels := strings.Split(s, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if !hostLabel.MatchString(l) {
			return false
		}
	}
	last := labels[len(labels)-1]
	return strings.Trim(last, "0123456789") != "" // a numeric TLD is an IP address in disguise
}

// tls decides the TLS mode from the keys that are set and checks that they
// fit together. A certificate pair must load now: `hookbox check` runs as
// the service user, so a file it cannot read is found before a restart.
func (v *validator) tls(s *ServerConfig, r rawServer) {
	s.CertFile, s.KeyFile = r.CertFile, r.KeyFile
	s.Domain = strings.ToLower(r.Domain)
	s.ACMEEmail, s.ACMEDirectory = r.ACMEEmail, r.ACMEDirectory
	switch {
	case r.Domain != "" && (r.CertFile != "" || r.KeyFile != ""):
		key := "server.cert_file"
		if r.CertFile == "" {
			key = "server.key_file"
		}
		v.fail(key, "not with server.domain: either hookbox gets the certificate itself (domain) or reads it from files (cert_file, key_file)")
		return
	case r.Domain != "":
		s.TLS = TLSACME
	case r.CertFile != "" || r.KeyFile != "":
		s.TLS = TLSFiles
	}
	if s.TLS != TLSACME {
		for _, k := range []struct{ key, val string }{{"server.acme_email", r.ACMEEmail}, {"server.acme_directory", r.ACMEDirectory}} {
			if k.val != "" {
				v.fail(k.key, "only with server.domain (ACME)")
			}
		}
	}
	if r.HTTPListen != nil {
		s.HTTPListen = *r.HTTPListen
		if s.TLS == TLSNone {
			v.fail("server.http_listen", "only with TLS (server.domain or server.cert_file): it redirects to HTTPS")
		} else if _, port, err := net.SplitHostPort(s.HTTPListen); err != nil || port == "" {
			v.fail("server.http_listen", fmt.Sprintf("%q is not host:port", s.HTTPListen))
		} else if s.HTTPListen == s.Listen {
			v.fail("server.http_listen", "is the same address as server.listen")
		}
	}
	switch s.TLS {
	case TLSFiles:
		switch {
		case r.CertFile == "":
			v.fail("server.cert_file", "server.key_file needs its certificate: set cert_file (PEM, the full chain)")
		case r.KeyFile == "":
			v.fail("server.key_file", "server.cert_file needs its private key: set key_file (PEM)")
		default:
			if _, err := os.Stat(r.CertFile); err != nil {
				v.fail("server.cert_file", fmt.Sprintf("cannot read %s: %v", r.CertFile, errors.Unwrap(err)))
			} else if _, err := os.Stat(r.KeyFile); err != nil {
				v.fail("server.key_file", fmt.Sprintf("cannot read %s: %v", r.KeyFile, errors.Unwrap(err)))
			} else if _, err := tls.LoadX509KeyPair(r.CertFile, r.KeyFile); err != nil {
				v.fail("server.cert_file", fmt.Sprintf("cannot load the pair %s and %s: %v", r.CertFile, r.KeyFile, err))
			}
		}
	case TLSACME:
		if !validDomain(s.Domain) {
			v.fail("server.domain", fmt.Sprintf("%q is not a DNS name a CA issues for (e.g. \"hooks.example.com\"; no IP address, no wildcard)", r.Domain))
		}
		if s.ACMEDirectory == "" {
			s.ACMEDirectory = DefaultACMEDirectory
		} else if u, err := url.Parse(s.ACMEDirectory); err != nil || u.Scheme != "https" || u.Host == "" {
			v.fail("server.acme_directory", fmt.Sprintf("%q is not an https URL", s.ACMEDirectory))
		}
		if s.ACMEEmail != "" {
			if a, err := mail.ParseAddress(s.ACMEEmail); err != nil || a.Address != s.ACMEEmail {
				v.fail("server.acme_email", fmt.Sprintf("%q is not an email address", s.ACMEEmail))
			}
		}
		if r.HTTPListen == nil {
			s.HTTPListen = DefaultHTTPListen
		}
	}
}

// backup checks the [backup] table; dir defaults to data_dir/backups.
func (v *validator) backup(b *BackupConfig, r rawBackup, dataDir string) {
	b.Schedule = r.Schedule
	switch b.Schedule {
	case "":
		b.Schedule = DefaultBackupSchedule
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
		b.Dir = filepath.Join(dataDir, BackupsDirName)
	}
	b.Keep = DefaultBackupKeep
	if r.Keep != nil {
		b.Keep = *r.Keep
		if b.Keep < 1 || b.Keep > 10000 {
			v.fail("backup.keep", "must be between 1 and 10000")
		}
	}
}

// LoadDataDir reads only server.data_dir from the config file at path, for
// commands that work on the data file while the service is stopped
// (restore): they need neither the secrets nor a valid rest of the file.
func LoadDataDir(path string) (string, error) {
	var raw struct {
		Server struct {
			DataDir string `toml:"data_dir"`
		} `toml:"server"`
	}
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return "", &ConfigError{File: path, Reason: err.Error()}
	}
	if raw.Server.DataDir == "" {
		return DefaultDataDir, nil
	}
	return raw.Server.DataDir, nil
}
