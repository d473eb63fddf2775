package config

import (
	"fmt"
	"net/url"

	"github.com/BurntSushi/toml"

	"hookbox/app"
)

// leaseMargin is how much longer than the longest destination timeout a
// lease must be: the attempt is recorded after the send ends.
const leaseMargin = app.LeaseMargin

type rawStorage struct {
	Backend string `toml:"backend"`
	URL     string `toml:"url"`
	URLEnv  string `toml:"url_env"`
	Lease   string `toml:"lease"`
	// SearchIndex is a pointer: absent means on.
	SearchIndex *bool `toml:"search_index"`
}

// storage checks the [storage] table. It runs after the destinations (a
// lease must outlast their timeouts) and settles [backup] for PostgreSQL,
// whose backups are the database's.
func (v *validator) storage(cfg *app.Config, r rawStorage, rawBackupSchedule string) {
	s := &cfg.Storage
	s.Backend = r.Backend
	switch s.Backend {
	case "":
		s.Backend = app.BackendBBolt
	case app.BackendBBolt, app.BackendPostgres:
	default:
		v.fail("storage.backend", fmt.Sprintf("%q: use %q (the default: one file in data_dir) or %q (one database for several nodes)", r.Backend, app.BackendBBolt, app.BackendPostgres))
		return
	}
	if s.Backend == app.BackendBBolt {
		for _, k := range []struct{ key, val string }{{"storage.url", r.URL}, {"storage.url_env", r.URLEnv}, {"storage.lease", r.Lease}} {
			if k.val != "" {
				v.fail(k.key, `only with backend = "postgres"`)
			}
		}
		if r.SearchIndex != nil {
			v.fail("storage.search_index", `only with backend = "postgres" (bbolt searches the newest bodies within a budget, with no index)`)
		}
		return
	}
	key := "storage.url"
	switch {
	case r.URL != "" && r.URLEnv != "":
		v.fail("storage.url_env", "give url or url_env, not both")
		return
	case r.URL != "":
		s.URL = r.URL
	default:
		name := r.URLEnv
		if name == "" {
			name = app.DefaultDatabaseURLEnv
		}
		key = "storage.url_env"
		s.URL = v.env1(key, name)
		if s.URL == "" {
			return
		}
		key += " (" + name + ")"
	}
	// The reasons never quote the URL: it may hold the password.
	if u, err := url.Parse(s.URL); err != nil {
		v.fail(key, "is not a URL (use postgres://user:password@host:5432/database?sslmode=verify-full)")
	} else if u.Scheme != "postgres" && u.Scheme != "postgresql" {
		v.fail(key, "must start with postgres:// or postgresql://")
	} else if u.Host == "" && u.Query().Get("host") == "" {
		v.fail(key, "names no host")
	} else if len(u.Path) < 2 {
		v.fail(key, "names no database (postgres://…/DATABASE)")
	}
	s.Lease = v.duration("storage.lease", r.Lease, app.DefaultLease)
	s.SearchIndex = r.SearchIndex == nil || *r.SearchIndex
	for _, d := range cfg.Destinations {
		if d.Timeout+leaseMargin > s.Lease {
			v.fail("storage.lease", fmt.Sprintf("%v is too short for destination %q (timeout %v): a lease must outlast a send by %v", s.Lease, d.Name, d.Timeout, leaseMargin))
			break
		}
	}
	switch rawBackupSchedule {
	case "", "off":
		cfg.Backup.Schedule = ""
	default:
		v.fail("backup.schedule", `with backend = "postgres" the backups are the database's (pg_dump, or the provider's point-in-time recovery): set "off" or leave it out`)
	}
}

// LoadBackend reads only [storage] backend from the config file at path,
// for commands that must know it without a valid rest of the file
// (restore).
func LoadBackend(path string) (string, error) {
	var raw struct {
		Storage struct {
			Backend string `toml:"backend"`
		} `toml:"storage"`
	}
	if _, err := toml.DecodeFile(path, &raw); err != nil {
		return "", &app.ConfigError{File: path, Reason: err.Error()}
	}
	if raw.Storage.Backend == "" {
		return app.BackendBBolt, nil
	}
	return raw.Storage.Backend, nil
}
