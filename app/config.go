package app

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"regexp"
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
	Path      string
	Server    ServerConfig
	Sources   []*Source
	Retention RetentionConfig
}

// ServerConfig is the [server] table.
type ServerConfig struct {
	Listen       string
	PublicURL    string
	DataDir      string
	MaxBodyBytes int
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
	maxMaxBodyBytes     = 64 << 20
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
	Server    rawServer    `toml:"server"`
	Source    []rawSource  `toml:"source"`
	Retention rawRetention `toml:"retention"`
}

type rawServer struct {
	Listen       string `toml:"listen"`
	PublicURL    string `toml:"public_url"`
	DataDir      string `toml:"data_dir"`
	MaxBodyBytes *int   `toml:"max_body_bytes"`
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
	v := validator{file: file, env: lookupEnv}
	cfg := &Config{Path: file}
	v.server(&cfg.Server, raw.Server)
	v.retention(&cfg.Retention, raw.Retention)
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
	if v.err != nil {
		return nil, v.err
	}
	return cfg, nil
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
	}
	if _, port, err := net.SplitHostPort(s.Listen); err != nil || port == "" {
		v.fail("server.listen", fmt.Sprintf("%q is not host:port", s.Listen))
	}
	if r.PublicURL != "" {
		u, err := url.Parse(r.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			v.fail("server.public_url", fmt.Sprintf("%q is not an absolute http(s) URL", r.PublicURL))
		}
		s.PublicURL = strings.TrimRight(r.PublicURL, "/")
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
		val, ok := v.env(name)
		switch {
		case name == "":
			v.fail(k, "names no environment variable")
		case !ok:
			v.fail(k, fmt.Sprintf("environment variable %s is not set", name))
		case val == "":
			v.fail(k, fmt.Sprintf("environment variable %s is empty", name))
		default:
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
