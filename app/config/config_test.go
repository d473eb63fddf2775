package config_test

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseConfig(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", `[[source]]
name = "gh"
provider = "github"
secret = "s3cret"
`, env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.Server.Listen, "127.0.0.1:8080"; got != want {
			t.Errorf("listen = %q, want %q", got, want)
		}
		if cfg.Server.DataDir != "./data" || cfg.Server.MaxBodyBytes != 1<<20 {
			t.Errorf("server = %+v", cfg.Server)
		}
		if cfg.Retention.EventIDs != 720*time.Hour || cfg.Retention.Audit != 8760*time.Hour || cfg.Retention.Sweep != "@hourly" {
			t.Errorf("retention = %+v", cfg.Retention)
		}
		if s := cfg.SourceByName("gh"); s == nil || s.URL != "/in/gh" || s.Verify == nil {
			t.Errorf("source = %+v", s)
		}
	})
	t.Run("SecretsFromEnv", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", `[server]
public_url = "https://hooks.example.com/"
[[source]]
name = "sq"
provider = "square"
secrets_env = ["OLD", "NEW"]
`, env(map[string]string{"OLD": "a", "NEW": "b"}))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.Sources[0].URL, "https://hooks.example.com/in/sq"; got != want {
			t.Errorf("URL = %q, want %q", got, want)
		}
	})
	t.Run("EdgeLimits", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", `[server]
trusted_proxies = ["127.0.0.1", "::1", "10.0.0.0/8", "::ffff:192.168.0.0/112", "2001:db8::/32"]
max_connections = 100
max_connections_per_ip = 0
`, env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.MaxConnections != 100 || cfg.Server.MaxConnectionsPerIP != 0 {
			t.Errorf("connections = %d, %d per address", cfg.Server.MaxConnections, cfg.Server.MaxConnectionsPerIP)
		}
		for addr, want := range map[string]bool{"127.0.0.1": true, "::ffff:127.0.0.1": true, "127.0.0.2": false, "::1": true,
			"10.200.1.1": true, "11.0.0.1": false, "192.168.7.7": true, "192.169.0.1": false, "2001:db8:1::1": true, "2001:db9::1": false} {
			if got := cfg.Server.Trusted(netip.MustParseAddr(addr)); got != want {
				t.Errorf("Trusted(%s) = %v, want %v", addr, got, want)
			}
		}
		cfg, err = config.Parse("c.toml", "", env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if s := cfg.Server; len(s.TrustedProxies) != 0 || s.Trusted(netip.MustParseAddr("127.0.0.1")) ||
			s.MaxConnections != app.DefaultMaxConnections || s.MaxConnectionsPerIP != app.DefaultMaxConnectionsPerIP {
			t.Errorf("defaults: %v trusted, %d connections, %d per address", s.TrustedProxies, s.MaxConnections, s.MaxConnectionsPerIP)
		}
	})
	t.Run("BodyBudget", func(t *testing.T) {
		for _, tt := range []struct {
			server string
			want   int64
		}{
			{"", app.DefaultMaxBodyBytesTotal},
			{"max_body_bytes_total = 2097152", 2 << 20},
			{"max_body_bytes = 67108864", 128 << 20},
		} {
			cfg, err := config.Parse("c.toml", "[server]\n"+tt.server+"\n", env(nil))
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.Server.MaxBodyBytesTotal; got != tt.want {
				t.Errorf("%q: max_body_bytes_total = %d, want %d", tt.server, got, tt.want)
			}
		}
	})
	t.Run("DefaultFile", func(t *testing.T) {
		// The repository's config.toml is what `go run .` serves with.
		cfg, err := config.Load(filepath.Join("..", "..", "config.toml"), env(nil))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.Listen != "127.0.0.1:8080" || cfg.Server.DataDir != filepath.Join("..", "..", "data") || cfg.SourceByName("demo") == nil {
			t.Fatalf("default config = %+v", cfg)
		}
	})
}

func TestParseConfig_Errors(t *testing.T) {
	const src = "[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret = \"x\"\n"
	for _, tt := range []struct {
		name, toml, key, reason string
	}{
		{"UnknownKey", "[server]\nlisten = \"127.0.0.1:1\"\nlistne = 1\n", "server.listne", "unknown key"},
		{"UnknownTable", "[sever]\nlisten = 1\n", "sever", "unknown key"},
		{"UnknownSourceKey", src + "secrett = \"y\"\n", "source[0] (s).secrett", "unknown key; did you mean secret?"},
		{"BadDuration", src + "[retention]\nevent_ids = \"3 days\"\n", "retention.event_ids", "not a duration"},
		{"NegativeDuration", src + "[retention]\nevents = \"-1h\"\n", "retention.events", "must be positive"},
		{"ZeroAudit", src + "[retention]\naudit = \"0s\"\n", "retention.audit", "must be positive"},
		{"BadTolerance", src + "tolerance = \"soon\"\n", "source[0] (s).tolerance", "not a duration"},
		{"BadCron", src + "[retention]\nsweep = \"every hour\"\n", "retention.sweep", "not a cron spec"},
		{"NoSecret", "[[source]]\nname = \"s\"\nprovider = \"github\"\n", "source[0] (s).secret", "no secret"},
		{"EmptySecret", "[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret = \"\"\nsecrets = [\"\"]\n", "source[0] (s).secrets[0]", "is empty"},
		{"EnvUnset", "[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret_env = \"NOPE\"\n", "source[0] (s).secret_env", "NOPE is not set"},
		{"DuplicateName", src + src, "source[1] (s).name", "duplicate source name"},
		{"UnknownProvider", "[[source]]\nname = \"s\"\nprovider = \"shopfiy\"\nsecret = \"x\"\n", "source[0] (s).provider", `unknown provider "shopfiy"`},
		{"BadName", "[[source]]\nname = \"Bad Name\"\nprovider = \"github\"\nsecret = \"x\"\n", "source[0] (Bad Name).name", "must be"},
		{"SquareNeedsPublicURL", "[[source]]\nname = \"sq\"\nprovider = \"square\"\nsecret = \"x\"\n", "server.public_url", "signs the notification URL"},
		{"HMACNeedsHeader", "[[source]]\nname = \"h\"\nprovider = \"hmac\"\nsecret = \"x\"\nid = \"{body.id}\"\n", "source[0] (h).signature_header", "needs the name"},
		{"HMACNeedsID", "[[source]]\nname = \"h\"\nprovider = \"hmac\"\nsecret = \"x\"\nsignature_header = \"X-Sig\"\n", "source[0] (h).id", "needs an id template"},
		{"BadTemplate", src + "id = \"{body.}\"\n", "source[0] (s).id", "empty path element"},
		{"BadListen", "[server]\nlisten = \"8080\"\n", "server.listen", "not host:port"},
		{"BadPublicURL", "[server]\npublic_url = \"hooks.example.com\"\n", "server.public_url", "not an absolute"},
		{"BodyLimit", "[server]\nmax_body_bytes = 0\n", "server.max_body_bytes", "must be between"},
		{"BadStandardSecret", "[[source]]\nname = \"s\"\nprovider = \"standard\"\nsecret = \"whsec_!!!notbase64\"\n", "source[0] (s).secret", ""},
		{"Syntax", "[server\nlisten = 1\n", "", "hookbox.toml:2: expected '.' or ']'"},
		{"DestBadURL", src + "[[destination]]\nname = \"pos\"\nurl = \"ftp://x\"\n", "destination[0] (pos).url", "absolute http(s) URL"},
		{"DestUserInfo", src + "[[destination]]\nname = \"pos\"\nurl = \"https://u:p@x\"\n", "destination[0] (pos).url", "without user:password"},
		{"DestBadRetry", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\nretry = [\"1m\", \"soon\"]\n", "destination[0] (pos).retry[1]", "not a duration"},
		{"DestBadSecret", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\nsecret = \"plain\"\n", "destination[0] (pos).secret", "whsec_"},
		{"DestDuplicate", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\n[[destination]]\nname = \"pos\"\nurl = \"https://y\"\n", "destination[1] (pos).name", "duplicate"},
		{"DestHeaderValue", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\nheaders = { X-A = \"a\\r\\nX-B: b\" }\n", "destination[0] (pos).headers.X-A", "line break"},
		{"DestConcurrency", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\nconcurrency = 0\n", "destination[0] (pos).concurrency", "between 1"},
		{"DestRate", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\nrate = \"fast\"\n", "destination[0] (pos).rate", "want N/s, N/m or N/h"},
		{"DestRateZero", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\nrate = \"0/s\"\n", "destination[0] (pos).rate", "between 1"},
		{"DestSvixWithoutSecret", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\nsignature_headers = \"svix\"\n", "destination[0] (pos).signature_headers", "needs the destination's secret"},
		{"DestSignatureHeaders", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\nsignature_headers = \"Svix\"\n", "destination[0] (pos).signature_headers", `"Svix" is not one of "standard"`},
		{"RouteUnknownSource", src + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\n[[route]]\nsource = \"nope\"\nto = [\"pos\"]\n", "route[0].source", `no [[source]] named "nope"`},
		{"RouteUnknownDest", src + "[[route]]\nsource = \"s\"\nto = [\"pos\"]\n", "route[0].to[0]", `no [[destination]] named "pos"`},
		{"RouteNoDest", src + "[[route]]\nsource = \"s\"\n", "route[0].to", "names no destination"},
		{"RouteUnknownKey", src + "[[route]]\nsource = \"s\"\nto = []\nwhen = 1\n", "route[0].when", "unknown key"},
		{"AlertBadURL", src + "[alerts]\nurl = \"slack\"\n", "alerts.url", "absolute http(s) URL"},
		{"StatusEnvUnset", src + "[status]\npassword_env = \"NOPE\"\n", "status.password_env", "NOPE is not set"},
		{"WrongType", "[server]\nmax_body_bytes = \"big\"\n", "", "max_body_bytes"},
		{"IDsShorterThanRetries", src + "[retention]\nevent_ids = \"1h\"\n[[destination]]\nname = \"pos\"\nurl = \"https://x\"\n[[route]]\nsource = \"s\"\nto = [\"pos\"]\n",
			"retention.event_ids", "shorter than"},
		{"TrustedProxyNotAnAddress", "[server]\ntrusted_proxies = [\"127.0.0.1\", \"nginx\"]\n", "server.trusted_proxies[1]", "not an IP address or a CIDR range"},
		{"TrustedProxyHostBits", "[server]\ntrusted_proxies = [\"10.1.2.3/8\"]\n", "server.trusted_proxies[0]", "write 10.0.0.0/8"},
		{"TrustedProxyWithPort", "[server]\ntrusted_proxies = [\"127.0.0.1:80\"]\n", "server.trusted_proxies[0]", "not an IP address"},
		{"TrustedProxyZone", "[server]\ntrusted_proxies = [\"fe80::1%eth0\"]\n", "server.trusted_proxies[0]", "not an IP address"},
		{"MaxConnections", "[server]\nmax_connections = 0\n", "server.max_connections", "must be between 1"},
		{"BodyBudgetUnderBody", "[server]\nmax_body_bytes = 4096\nmax_body_bytes_total = 8191\n", "server.max_body_bytes_total", "twice server.max_body_bytes (8192)"},
		{"BodyBudgetTooLarge", "[server]\nmax_body_bytes_total = 2199023255552\n", "server.max_body_bytes_total", "must be between"},
		{"MaxConnectionsPerIP", "[server]\nmax_connections = 100\nmax_connections_per_ip = 101\n", "server.max_connections_per_ip", "server.max_connections (100)"},
		{"MaxConnectionsPerIPNegative", "[server]\nmax_connections_per_ip = -1\n", "server.max_connections_per_ip", "between 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("hookbox.toml", tt.toml, env(nil))
			ce := findError(t, err, tt.key)
			if ce.File != "hookbox.toml" || !strings.Contains(ce.Error(), tt.reason) {
				t.Fatalf("err = %q (key %q); want key %q and reason containing %q", err, ce.Key, tt.key, tt.reason)
			}
			if !strings.HasPrefix(err.Error(), "hookbox.toml:") {
				t.Fatalf("err = %q does not start with the file name", err)
			}
		})
	}
}

// retention.event_ids must outlast the longest a delivery can still be on
// its way, debounce window and retries included: an id forgotten earlier
// is accepted again when its sender resends it, and delivered twice.
func TestParseConfig_EventIDsCoverRetries(t *testing.T) {
	const base = `[[source]]
name = "s"
provider = "github"
secret = "x"
[[destination]]
name = "pos"
url = "https://pos.example.com"
timeout = "10s"
retry = ["1h", "2h"]
[[destination]]
name = "erp"
url = "https://erp.example.com"
retry = ["1m"]
[[route]]
name = "orders"
source = "s"
to = ["erp", "pos"]
key = "{body.id}"
debounce = "10m"
rate_limit = "1/5m"
`
	_, err := config.Parse("c.toml", base+"[retention]\nevent_ids = \"2h\"\n", env(nil))
	want := `c.toml:22: retention.event_ids: 2h is shorter than a delivery can take: route "orders" holds an event up to 15m (debounce 10m plus one rate_limit window of 5m), ` +
		`then destination "pos" retries for up to 3h36m30s (retry 1h, 2h with 20% jitter, and 3 attempts of up to 10s); ` +
		`a sender that resends the event's id after hookbox forgot it would get it accepted and delivered twice. Set event_ids to at least 3h52m`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	if _, err := config.Parse("c.toml", base+"[retention]\nevent_ids = \"3h52m\"\n", env(nil)); err != nil {
		t.Fatalf("event_ids as long as the horizon: %v", err)
	}
	if _, err := config.Parse("c.toml", base, env(nil)); err != nil {
		t.Fatalf("the default event_ids: %v", err)
	}
}

// Config errors name keys and variables, never secret values.
func TestParseConfig_ErrorsHideSecrets(t *testing.T) {
	const secret = "whsec_!!SUPER-SECRET!!"
	_, err := config.Parse("c.toml", "[[source]]\nname = \"s\"\nprovider = \"standard\"\nsecret = \""+secret+"\"\n", env(nil))
	if err == nil {
		t.Fatal("want an error for a secret that is not base64")
	}
	if strings.Contains(err.Error(), "SUPER-SECRET") {
		t.Fatalf("error leaks the secret: %v", err)
	}
}

func TestLoadConfig_Missing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.toml")
	_, err := config.Load(path, nil)
	if err == nil || !strings.HasPrefix(err.Error(), path+": there is no config file: "+path+" does not exist") {
		t.Fatalf("err = %v", err)
	}
	// It says what to do: the flag, where the default is looked for, where to start from.
	for _, want := range []string{"hookbox check -config /etc/hookbox/config.toml", "config.toml in the working directory", "example config.toml", "install.sh"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant %q in it", err, want)
		}
	}
}

func FuzzParseConfig(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config.toml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add("[[source]]\nname = \"h\"\nprovider = \"hmac\"\nsecret = \"x\"\nsignature_header = \"X-Sig\"\nid = \"{body.id}\"\n")
	f.Add("[retention]\nsweep = \"*/5 * * * *\"\nevent_ids = \"1h\"\n")
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := config.Parse("f.toml", s, env(map[string]string{"A": "b"}))
		if err != nil {
			var ce *app.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error is not a ConfigError: %v", err)
			}
			return
		}
		if cfg.Server.MaxBodyBytes <= 0 || cfg.Retention.EventIDs <= 0 {
			t.Fatalf("accepted an invalid config: %+v", cfg)
		}
	})
}

func TestConfig_DestinationsFor(t *testing.T) {
	cfg, err := config.Parse("c.toml", `
[[source]]
name = "shop"
provider = "shopify"
secret = "x"
[[destination]]
name = "pos"
url = "http://127.0.0.1:9000/"
[[destination]]
name = "erp"
url = "https://erp.example.com/hooks"
timeout = "3s"
retry = ["1s"]
concurrency = 2
headers = { Authorization = "Bearer t" }
[[route]]
source = "shop"
topics = ["orders/*", "refunds/create"]
to = ["pos", "erp"]
[[route]]
source = "shop"
to = ["erp"]
`, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ topic, want string }{
		{"orders/create", "pos,erp"},
		{"orders/paid", "pos,erp"},
		{"refunds/create", "pos,erp"},
		{"customers/update", "erp"},
	} {
		var dests []string
		for _, d := range cfg.DestinationsFor("shop", tt.topic) {
			dests = append(dests, d.Dest)
		}
		if got := strings.Join(dests, ","); got != tt.want {
			t.Errorf("DestinationsFor(%q) = %q, want %q", tt.topic, got, tt.want)
		}
	}
	if got := cfg.DestinationsFor("other", "orders/create"); got != nil {
		t.Errorf("other source: %v, want none", got)
	}
	erp := cfg.DestinationByName("erp")
	if erp.Timeout != 3*time.Second || len(erp.Retry) != 1 || erp.Concurrency != 2 || erp.Headers["Authorization"] != "Bearer t" {
		t.Errorf("erp = %+v", erp)
	}
	pos := cfg.DestinationByName("pos")
	if pos.Timeout != 15*time.Second || len(pos.Retry) != 5 || pos.Retry[4] != 8*time.Hour || pos.Concurrency != 8 {
		t.Errorf("pos defaults = %+v", pos)
	}
}

func TestGlob(t *testing.T) {
	for _, tt := range []struct {
		pattern, s string
		want       bool
	}{
		{"orders/*", "orders/create", true},
		{"orders/*", "orders/", true},
		{"orders/*", "order/create", false},
		{"*", "anything/at/all", true},
		{"*.created", "customer.subscription.created", true},
		{"customer.*.updated", "customer.subscription.updated", true},
		{"customer.*.updated", "customer.updated", false},
		{"orders/?aid", "orders/paid", true},
		{"push", "push", true},
		{"push", "pushed", false},
		{"", "", true},
	} {
		if got := app.Glob(tt.pattern, tt.s); got != tt.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tt.pattern, tt.s, got, tt.want)
		}
	}
}

// signature_headers defaults to "standard" and forward_signatures to true;
// both are read as given.
func TestParseConfig_DestinationSignatureKeys(t *testing.T) {
	cfg, err := config.Parse("c.toml", `
[[destination]]
name = "plain"
url = "https://x"
[[destination]]
name = "svix"
url = "https://y"
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
signature_headers = "svix"
forward_signatures = false
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, headers string
		forward       bool
	}{{"plain", app.SignatureHeadersStandard, true}, {"svix", app.SignatureHeadersSvix, false}} {
		d := cfg.DestinationByName(tt.name)
		if d.SignatureHeaders != tt.headers || d.ForwardSignatures != tt.forward {
			t.Errorf("%s: signature_headers %q forward_signatures %v; want %q %v", tt.name, d.SignatureHeaders, d.ForwardSignatures, tt.headers, tt.forward)
		}
	}
}

// findError returns the mistake of err (one ConfigError, or several
// joined) whose key starts with key; it fails the test when there is none.
func findError(t *testing.T, err error, key string) *app.ConfigError {
	t.Helper()
	var all []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		all = j.Unwrap()
	} else if err != nil {
		all = []error{err}
	}
	for _, e := range all {
		var ce *app.ConfigError
		if errors.As(e, &ce) && strings.HasPrefix(ce.Key, key) {
			return ce
		}
	}
	t.Fatalf("err = %v, want a mistake of key %q", err, key)
	return nil
}
