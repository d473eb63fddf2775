package app_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// reloadBase is a config with one of each thing a reload compares.
func reloadBase() *app.Config {
	return &app.Config{
		Path: "/etc/hookbox/config.toml",
		Server: app.ServerConfig{Listen: "127.0.0.1:8080", DataDir: "/var/lib/hookbox", MaxBodyBytes: 1 << 20,
			MaxBodyBytesTotal: 64 << 20, MaxConnections: 4096, MaxConnectionsPerIP: 256, PublicURL: "https://a.example"},
		Status:       app.StatusConfig{User: "admin", Password: "pw"},
		Sources:      []*app.Source{{Name: "shop", Provider: "shopify"}},
		Destinations: []*app.Destination{{Name: "pos", URL: "http://pos.local/hook", Timeout: time.Second, Concurrency: 8}},
		Routes:       []*app.Route{{Name: "r1", Source: "shop", To: []string{"pos"}}},
		Retention:    app.RetentionConfig{EventIDs: time.Hour, Events: time.Hour, Sweep: "@hourly"},
		Alerts:       app.AlertsConfig{DeadLettersOver: 10, Check: "@every 1m"},
		Backup:       app.BackupConfig{Schedule: "@daily", Keep: 7},
		Storage:      app.StorageConfig{Backend: app.BackendBBolt},
	}
}

// What a reload applies live and what it names for a restart, keeping
// the running value of the latter.
func TestSettle(t *testing.T) {
	for _, tt := range []struct {
		name    string
		change  func(c *app.Config)
		restart []string
		check   func(t *testing.T, d app.ConfigDiff, next *app.Config)
	}{
		{name: "Nothing", change: func(*app.Config) {}, check: func(t *testing.T, d app.ConfigDiff, _ *app.Config) {
			if !d.Empty() {
				t.Errorf("diff = %+v; want empty", d)
			}
		}},
		{name: "Listen", change: func(c *app.Config) { c.Server.Listen = ":9090" }, restart: []string{"server.listen"},
			check: func(t *testing.T, _ app.ConfigDiff, next *app.Config) {
				if next.Server.Listen != "127.0.0.1:8080" {
					t.Errorf("listen in force = %q; want the running one", next.Server.Listen)
				}
			}},
		{name: "HTTPListen", change: func(c *app.Config) { c.Server.HTTPListen = ":80" }, restart: []string{"server.http_listen"}},
		{name: "DataDir", change: func(c *app.Config) { c.Server.DataDir = "/srv" }, restart: []string{"server.data_dir"}},
		{name: "TLSMode", change: func(c *app.Config) { c.Server.TLS, c.Server.Domain = app.TLSACME, "a.example" }, restart: []string{"server.tls"}},
		{name: "CertFile", change: func(c *app.Config) { c.Server.CertFile = "/etc/x.pem" }, restart: []string{"server.tls"}},
		{name: "MaxBodyBytes", change: func(c *app.Config) { c.Server.MaxBodyBytes = 2 << 20 }, restart: []string{"server.max_body_bytes"}},
		{name: "MaxBodyBytesTotal", change: func(c *app.Config) { c.Server.MaxBodyBytesTotal = 1 << 20 }, restart: []string{"server.max_body_bytes_total"}},
		{name: "MaxConnectionsPerIP", change: func(c *app.Config) { c.Server.MaxConnectionsPerIP = 1 }, restart: []string{"server.max_connections"}},
		{name: "TrustedProxies", change: func(c *app.Config) { c.Server.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} },
			restart: []string{"server.trusted_proxies"}},
		{name: "StorageBackend", change: func(c *app.Config) { c.Storage.Backend, c.Storage.URL = app.BackendPostgres, "postgres://db" }, restart: []string{"storage"}},
		{name: "StatusPassword", change: func(c *app.Config) { c.Status.Password = "other" }, restart: []string{"status"}},
		{name: "Backup", change: func(c *app.Config) { c.Backup.Keep = 3 }, restart: []string{"backup"}},
		{name: "Several", change: func(c *app.Config) { c.Server.Listen, c.Storage.URL = ":1", "x" }, restart: []string{"server.listen", "storage"}},
		{name: "PublicURLLive", change: func(c *app.Config) { c.Server.PublicURL = "https://b.example" },
			check: func(t *testing.T, _ app.ConfigDiff, next *app.Config) {
				if next.Server.PublicURL != "https://b.example" {
					t.Errorf("public_url in force = %q; want the new one", next.Server.PublicURL)
				}
			}},
		{name: "RetentionLive", change: func(c *app.Config) { c.Retention.Events = 2 * time.Hour },
			check: func(t *testing.T, d app.ConfigDiff, next *app.Config) {
				if !d.Retention || next.Retention.Events != 2*time.Hour {
					t.Errorf("retention: diff %v, in force %v", d.Retention, next.Retention.Events)
				}
			}},
		{name: "AlertsLive", change: func(c *app.Config) { c.Alerts.FailingFor, c.Alerts.URL = 5*time.Minute, "https://hooks.example/a" },
			check: func(t *testing.T, d app.ConfigDiff, next *app.Config) {
				if !d.Alerts || next.Alerts.FailingFor != 5*time.Minute || next.Alerts.URL != "https://hooks.example/a" {
					t.Errorf("alerts: diff %v, in force %+v", d.Alerts, next.Alerts)
				}
			}},
		// The mailer and the log's handler are built at start.
		{name: "Email", change: func(c *app.Config) {
			c.Alerts.EmailTo, c.Alerts.EmailFrom, c.Alerts.SMTPURL = []string{"ops@a.example"}, "hb@a.example", "smtps://mail.example"
		}, restart: []string{"alerts.email_to", "alerts.email_from", "alerts.smtp_url_env"},
			check: func(t *testing.T, d app.ConfigDiff, next *app.Config) {
				if d.Alerts || next.Alerts.Enabled() || next.Alerts.SMTPURL != "" {
					t.Errorf("email in force: diff %v, %+v; want the running (none)", d.Alerts, next.Alerts)
				}
			}},
		{name: "Log", change: func(c *app.Config) { c.Log.Format = "json" }, restart: []string{"log"},
			check: func(t *testing.T, _ app.ConfigDiff, next *app.Config) {
				if next.Log.Format != "" {
					t.Errorf("log in force = %+v; want the running one", next.Log)
				}
			}},
		{name: "AddRemoveChange", change: func(c *app.Config) {
			c.Destinations = []*app.Destination{
				{Name: "pos", URL: "http://pos.local/hook", Timeout: 2 * time.Second, Concurrency: 8}, // changed
				{Name: "erp", URL: "http://erp.local/hook"},                                           // added
			}
			c.Routes = []*app.Route{{Name: "r2", Source: "shop", To: []string{"erp"}}} // r1 removed, r2 added
			c.Sources = []*app.Source{{Name: "shop", Provider: "shopify", URL: "https://b.example/in/shop"}}
		}, check: func(t *testing.T, d app.ConfigDiff, _ *app.Config) {
			if !slices.Equal(d.Destinations.Changed, []string{"pos"}) || !slices.Equal(d.Destinations.Added, []string{"erp"}) || len(d.Destinations.Removed) != 0 {
				t.Errorf("destinations = %+v", d.Destinations)
			}
			if !slices.Equal(d.Routes.Added, []string{"r2"}) || !slices.Equal(d.Routes.Removed, []string{"r1"}) || len(d.Routes.Changed) != 0 {
				t.Errorf("routes = %+v", d.Routes)
			}
			if !slices.Equal(d.Sources.Changed, []string{"shop"}) {
				t.Errorf("sources = %+v", d.Sources)
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old, next := reloadBase(), reloadBase()
			tt.change(next)
			d, err := app.Settle(old, next)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(d.Restart, tt.restart) {
				t.Errorf("restart = %q; want %q", d.Restart, tt.restart)
			}
			if len(tt.restart) > 0 && (next.Server.Listen != old.Server.Listen || next.Server.DataDir != old.Server.DataDir ||
				next.Storage != old.Storage || next.Status != old.Status || next.Backup != old.Backup ||
				next.Server.MaxBodyBytes != old.Server.MaxBodyBytes || !slices.Equal(next.Server.TrustedProxies, old.Server.TrustedProxies)) {
				t.Errorf("a key that waits for a restart changed in force: %+v", next.Server)
			}
			if tt.check != nil {
				tt.check(t, d, next)
			}
		})
	}
}

// On PostgreSQL the lease waits for a restart: a reload whose
// destination's timeout the running lease does not outlast is refused,
// even when the file's new lease would.
func TestSettle_LeaseOfRunning(t *testing.T) {
	old := reloadBase()
	old.Storage = app.StorageConfig{Backend: app.BackendPostgres, URL: "postgres://db/h", Lease: 10 * time.Second}
	for _, tt := range []struct {
		name    string
		timeout time.Duration
		ok      bool
	}{{"Shorter", 5 * time.Second, true}, {"TooLong", 6 * time.Second, false}} {
		t.Run(tt.name, func(t *testing.T) {
			next := reloadBase()
			next.Storage = app.StorageConfig{Backend: app.BackendPostgres, URL: "postgres://db/h", Lease: time.Minute}
			next.Destinations[0].Timeout = tt.timeout
			d, err := app.Settle(old, next)
			if (err == nil) != tt.ok {
				t.Fatalf("Settle: %v; want ok %v", err, tt.ok)
			}
			if !slices.Equal(d.Restart, []string{"storage"}) {
				t.Errorf("restart = %q; want storage", d.Restart)
			}
			var ce *app.ConfigError
			if err != nil && (!errors.As(err, &ce) || ce.Key != "destination[0] (pos).timeout") {
				t.Errorf("error = %v; want one naming destination[0] (pos).timeout", err)
			}
		})
	}
}

// A refusal keeps each mistake of a joined error, and a later config put
// in force forgets it.
func TestRunning_Refuse(t *testing.T) {
	r := app.NewRunning(reloadBase(), time.Unix(100, 0))
	err := errors.Join(&app.ConfigError{File: "c.toml", Key: "route.filter", Reason: "bad"},
		&app.ConfigError{File: "c.toml", Key: "route[1].filter", Reason: "worse"})
	f := r.Refuse("c.toml", time.Unix(200, 0), err)
	if want := []string{"c.toml: route.filter: bad", "c.toml: route[1].filter: worse"}; !slices.Equal(f.Reasons, want) {
		t.Fatalf("reasons = %q; want %q", f.Reasons, want)
	}
	if r.Refused() != f || r.Config().Path != "/etc/hookbox/config.toml" {
		t.Fatal("the refusal replaced the config in force")
	}
	r.Store(&app.Loaded{Config: reloadBase(), Path: "c.toml", At: time.Unix(300, 0)})
	if r.Refused() != nil {
		t.Fatal("a config put in force kept the old refusal")
	}
}

// The change list `hookbox reload` prints: each thing added, removed or
// changed by kind and name, the tables that changed, the keys that wait
// for a restart; "nothing changed" for the config in force.
func TestConfigDiff_Lines(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(c *app.Config)
		want   []string
	}{
		{name: "Nothing", change: func(*app.Config) {}, want: []string{"nothing changed"}},
		{name: "Everything", change: func(c *app.Config) {
			c.Sources = append(c.Sources, &app.Source{Name: "stripe", Provider: "stripe"})
			c.Destinations = []*app.Destination{
				{Name: "pos", URL: "http://pos.local/other", Timeout: time.Second, Concurrency: 8},
				{Name: "erp", URL: "http://erp.local/hook"},
			}
			c.Routes = []*app.Route{{Name: "r2", Source: "shop", To: []string{"erp"}}}
			c.Alerts.DeadLettersOver = 20
			c.Retention.Events = 2 * time.Hour
			c.Server.MaxBodyBytes, c.Log.Format = 2<<20, "json"
		}, want: []string{
			"source added: stripe",
			"destination added: erp",
			"destination changed: pos",
			"route added: r2",
			"route removed: r1",
			"alerts changed",
			"retention changed",
			"waits for a restart (the running value stays): server.max_body_bytes, log",
		}},
		{name: "OnlyRestart", change: func(c *app.Config) { c.Server.Listen = ":9090" },
			want: []string{"waits for a restart (the running value stays): server.listen"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			old, next := reloadBase(), reloadBase()
			tt.change(next)
			d, err := app.Settle(old, next)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Lines(); !slices.Equal(got, tt.want) {
				t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}
