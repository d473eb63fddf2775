// Reading a config file: the raw TOML shapes, Load and Parse
// (decode, refuse unknown keys, then validate: validate.go), and the
// partial loads of commands that need one key.

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"

	"hookbox/app"
)

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
	Log         rawLog           `toml:"log"`
	Quarantine  rawQuarantine    `toml:"quarantine"` // quarantine.go
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
	rawEmail               // email_to, email_from, smtp_url_env: email.go
	FailingFor      string `toml:"failing_for"`
}

type rawDestination struct {
	Name        string            `toml:"name"`
	URL         string            `toml:"url"`
	Command     []string          `toml:"command"` // instead of url: command.go
	Env         []string          `toml:"env"`
	Secret      string            `toml:"secret"`
	SecretEnv   string            `toml:"secret_env"`
	Timeout     string            `toml:"timeout"`
	Retry       *[]string         `toml:"retry"`
	Headers     map[string]string `toml:"headers"`
	Concurrency *int              `toml:"concurrency"`
	Rate        string            `toml:"rate"`
	// SignatureHeaders and ForwardSignatures: see Destination.
	SignatureHeaders  string `toml:"signature_headers"`
	ForwardSignatures *bool  `toml:"forward_signatures"`
}

type rawRoute struct {
	Name      string   `toml:"name"`
	Source    string   `toml:"source"`
	Topics    []string `toml:"topics"`
	To        []string `toml:"to"`
	Key       string   `toml:"key"`
	Debounce  string   `toml:"debounce"`
	RateLimit string   `toml:"rate_limit"`
	// Filter, Transform (CEL) and OrderKey (a template): see rules.go.
	Filter    string `toml:"filter"`
	Transform string `toml:"transform"`
	OrderKey  string `toml:"order_key"`
}

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
	MaxBodyBytesTotal   *int64   `toml:"max_body_bytes_total"`
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
	// Upstream is [source.upstream]: upstream.go.
	Upstream *rawUpstream `toml:"upstream"`
	// QuietAfter: see app.Source.
	QuietAfter string `toml:"quiet_after"`
}

type rawRetention struct {
	EventIDs string `toml:"event_ids"`
	Events   string `toml:"events"`
	Audit    string `toml:"audit"`
	Sweep    string `toml:"sweep"`
}

var sourceName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// Load reads and validates the config file at path. lookupEnv resolves
// *_env keys (os.LookupEnv when nil).
func Load(path string, lookupEnv func(string) (string, bool)) (*app.Config, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &app.ConfigError{File: path, Reason: noConfig(path)}
	}
	if err != nil {
		return nil, &app.ConfigError{File: path, Reason: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
	}
	return Parse(path, string(data), lookupEnv)
}

// noConfig says what to do when there is no config file at path.
func noConfig(path string) string {
	where := path
	if abs, err := filepath.Abs(path); err == nil && abs != path {
		where = fmt.Sprintf("%s (%s)", path, abs)
	}
	return fmt.Sprintf("there is no config file: %s does not exist. hookbox reads config.toml in the working directory "+
		"unless -config names another: run it where your config is, or give its path (hookbox check -config /etc/hookbox/config.toml). "+
		"To start one, copy the example config.toml at the root of hookbox's repository (it serves a demo source), "+
		"or run install.sh, which writes /etc/hookbox/config.toml", where)
}

// Parse validates the TOML text data as if read from file.
func Parse(file, data string, lookupEnv func(string) (string, bool)) (*app.Config, error) {
	cfg, v := parse(file, data, lookupEnv)
	if err := v.result(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// LoadReach is Load for a command that only talks to the running server
// (hookbox reload): when the file has mistakes, none of them in [server]
// (the address, TLS), it returns the config as far as it could be read,
// its [server] and [status] whole, and no error; the server reports the
// mistakes itself. Otherwise it is Load.
func LoadReach(path string, lookupEnv func(string) (string, bool)) (*app.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Load(path, lookupEnv)
	}
	cfg, v := parse(path, string(data), lookupEnv)
	err = v.result()
	if err == nil || cfg == nil {
		return cfg, err
	}
	for _, e := range v.errs {
		if e.Key == "server" || strings.HasPrefix(e.Key, "server.") {
			return nil, err
		}
	}
	return cfg, nil
}

// parse is Parse returning the config as far as it could be read (nil
// after a syntax error) and the validator with every mistake.
func parse(file, data string, lookupEnv func(string) (string, bool)) (*app.Config, *validator) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	v := &validator{file: file, env: lookupEnv}
	var tree map[string]any
	if _, err := toml.Decode(data, &tree); err != nil {
		v.errs = append(v.errs, syntaxError(file, err))
		return nil, v
	}
	v.lines = indexLines(data)
	v.shape("", "", tree, reflect.TypeOf(rawConfig{})) // shape.go
	if v.failed() > 0 {
		// Decode what is left once the wrong keys are out.
		var buf bytes.Buffer
		if err := toml.NewEncoder(&buf).Encode(tree); err != nil {
			v.errs = append(v.errs, &app.ConfigError{File: file, Reason: err.Error()})
			return nil, v
		}
		data = buf.String()
	}
	var raw rawConfig
	md, err := toml.Decode(data, &raw)
	if err != nil {
		v.errs = append(v.errs, syntaxError(file, err))
		return nil, v
	}
	for _, k := range md.Undecoded() { // shape found them all: this is a net
		v.fail(k.String(), "unknown key")
	}
	if err := adjustPaths(file, &raw, lookupEnv); err != nil { // paths.go
		v.fail("server.listen", err.(*app.ConfigError).Reason)
	}
	cfg := &app.Config{Path: file}
	v.server(&cfg.Server, raw.Server)
	v.retention(&cfg.Retention, raw.Retention)
	v.quarantine(&cfg.Quarantine, raw.Quarantine)
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
	v.email(&cfg.Alerts, raw.Alerts.rawEmail) // email.go
	v.log(&cfg.Log, raw.Log)
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
		key := fmt.Sprintf("route[%d]", i)
		if rr.Name != "" {
			key = fmt.Sprintf("route[%d] (%s)", i, rr.Name)
		}
		r := v.route(key, rr, cfg, raw)
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
	v.idsOutlastDeliveries(cfg) // rules.go
	return cfg, v
}

// syntaxError is a TOML decoder's error as a ConfigError with its line.
// The decoder quotes what it found: on a line whose key may hold a secret
// the quote is left out.
func syntaxError(file string, err error) *app.ConfigError {
	var pe toml.ParseError
	if !errors.As(err, &pe) {
		return &app.ConfigError{File: file, Reason: err.Error()}
	}
	msg := pe.Message
	last := pe.LastKey
	if i := strings.LastIndexByte(last, '.'); i >= 0 {
		last = last[i+1:]
	}
	if secretish(last) {
		msg = quotedText.ReplaceAllString(msg, "…")
	}
	if strings.HasPrefix(pe.Message, "expected value but found") {
		msg += ` (a string goes in quotes: key = "…")`
	}
	return &app.ConfigError{File: file, Line: pe.Position.Line, Key: pe.LastKey, Reason: msg}
}

// quotedText is what a decoder's message quotes.
var quotedText = regexp.MustCompile(`"[^"]*"|'[^']*'`)
