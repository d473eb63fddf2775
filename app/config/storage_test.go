package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
)

const storageSrc = "[[source]]\nname = \"s\"\nprovider = \"github\"\nsecret = \"x\"\n"

func TestParseConfig_Storage(t *testing.T) {
	const url = "postgres://hookbox:pw-Zq81@db.internal:5432/hookbox?sslmode=verify-full"
	t.Run("DefaultBBolt", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", storageSrc, env(nil))
		if err != nil || cfg.Storage.Backend != app.BackendBBolt || cfg.Storage.URL != "" || cfg.Backup.Schedule != app.DefaultBackupSchedule {
			t.Fatalf("storage = %+v, backup %+v, %v", cfg.Storage, cfg.Backup, err)
		}
	})
	t.Run("PostgresFromDefaultEnv", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", storageSrc+"[storage]\nbackend = \"postgres\"\n", env(map[string]string{"HOOKBOX_DATABASE_URL": url}))
		if err != nil || cfg.Storage.Backend != app.BackendPostgres || cfg.Storage.URL != url || cfg.Storage.Lease != app.DefaultLease || !cfg.Storage.SearchIndex {
			t.Fatalf("storage = %+v, %v; want the search index on by default", cfg.Storage, err)
		}
		if cfg.Backup.Schedule != "" {
			t.Fatalf("backups on postgres = %q, want off (they are the database's)", cfg.Backup.Schedule)
		}
	})
	t.Run("PostgresURLAndLease", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", storageSrc+"[[destination]]\nname = \"pos\"\nurl = \"https://x\"\ntimeout = \"20s\"\n"+
			"[storage]\nbackend = \"postgres\"\nurl = \""+url+"\"\nlease = \"30s\"\n[backup]\nschedule = \"off\"\n", env(nil))
		if err != nil || cfg.Storage.URL != url || cfg.Storage.Lease != 30*time.Second {
			t.Fatalf("storage = %+v, %v", cfg.Storage, err)
		}
	})
	t.Run("PostgresSearchIndexOff", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", storageSrc+"[storage]\nbackend = \"postgres\"\nurl = \""+url+"\"\nsearch_index = false\n", env(nil))
		if err != nil || cfg.Storage.SearchIndex {
			t.Fatalf("storage = %+v, %v; want the search index off", cfg.Storage, err)
		}
	})
	t.Run("PostgresURLEnv", func(t *testing.T) {
		cfg, err := config.Parse("c.toml", storageSrc+"[storage]\nbackend = \"postgres\"\nurl_env = \"DB\"\n", env(map[string]string{"DB": url}))
		if err != nil || cfg.Storage.URL != url {
			t.Fatalf("storage = %+v, %v", cfg.Storage, err)
		}
	})
	pg := storageSrc + "[storage]\nbackend = \"postgres\"\n"
	for _, tt := range []struct {
		name, toml string
		env        map[string]string
		key        string
		reason     string
	}{
		{"UnknownBackend", storageSrc + "[storage]\nbackend = \"sqlite\"\n", nil, "storage.backend", `use "bbolt"`},
		{"UnknownKey", storageSrc + "[storage]\nbackend = \"postgres\"\ndsn = \"x\"\n", nil, "storage.dsn", "unknown key"},
		{"SearchIndexWithBBolt", storageSrc + "[storage]\nsearch_index = false\n", nil, "storage.search_index", `only with backend = "postgres"`},
		{"URLWithBBolt", storageSrc + "[storage]\nurl = \"" + url + "\"\n", nil, "storage.url", `only with backend = "postgres"`},
		{"LeaseWithBBolt", storageSrc + "[storage]\nbackend = \"bbolt\"\nlease = \"1m\"\n", nil, "storage.lease", `only with backend = "postgres"`},
		{"NoURL", pg, nil, "storage.url_env", "HOOKBOX_DATABASE_URL is not set"},
		{"EmptyEnv", pg + "url_env = \"DB\"\n", map[string]string{"DB": ""}, "storage.url_env", "DB is empty"},
		{"Both", pg + "url = \"" + url + "\"\nurl_env = \"DB\"\n", nil, "storage.url_env", "not both"},
		{"NotPostgres", pg + "url = \"mysql://hookbox:pw-Zq81@db/hookbox\"\n", nil, "storage.url", "postgres://"},
		{"NotURL", pg + "url = \"host=db password=pw-Zq81\"\n", nil, "storage.url", "postgres://"},
		{"NoDatabase", pg + "url = \"postgres://hookbox:pw-Zq81@db\"\n", nil, "storage.url", "names no database"},
		{"BadFromEnv", pg, map[string]string{"HOOKBOX_DATABASE_URL": "postgres://hookbox:pw-Zq81@/hookbox"}, "storage.url_env (HOOKBOX_DATABASE_URL)", "names no host"},
		{"BadLease", pg + "url = \"" + url + "\"\nlease = \"soon\"\n", nil, "storage.lease", "not a duration"},
		{"LeaseShorterThanTimeout", storageSrc + "[[destination]]\nname = \"pos\"\nurl = \"https://x\"\ntimeout = \"1m\"\n[storage]\nbackend = \"postgres\"\nurl = \"" + url + "\"\n", nil,
			"storage.lease", `too short for destination "pos"`},
		{"BackupSchedule", pg + "url = \"" + url + "\"\n[backup]\nschedule = \"@daily\"\n", nil, "backup.schedule", "backups are the database's"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Parse("hookbox.toml", tt.toml, env(tt.env))
			ce := findError(t, err, tt.key)
			if ce.File != "hookbox.toml" || ce.Key != tt.key || !strings.Contains(ce.Reason, tt.reason) {
				t.Fatalf("err = %q (key %q); want key %q and reason containing %q", err, ce.Key, tt.key, tt.reason)
			}
			if strings.Contains(err.Error(), "pw-Zq81") {
				t.Fatalf("the error shows the database password: %v", err)
			}
		})
	}
}

func TestLoadBackend(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ text, want string }{
		{"[server]\ndata_dir = \"x\"\n", app.BackendBBolt},
		{"[storage]\nbackend = \"postgres\"\n[[source]]\nname = \"BAD NAME\"\n", app.BackendPostgres},
	} {
		path := filepath.Join(dir, "c.toml")
		os.WriteFile(path, []byte(tc.text), 0o600)
		if got, err := config.LoadBackend(path); got != tc.want || err != nil {
			t.Fatalf("LoadBackend(%q) = %q, %v; want %q", tc.text, got, err, tc.want)
		}
	}
}
