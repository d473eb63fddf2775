package config

import (
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strings"

	"github.com/BurntSushi/toml"

	"hookbox/app"
)

// InlineSecretKeys returns the keys of the config text data that hold a
// secret in the file itself rather than naming an environment variable
// (*_env): passwords, signing secrets, the alert URL (a Slack webhook URL
// is its own credential), a database URL with a password, destination
// headers whose name suggests a credential, and destination URLs with a
// query. It names keys, never
// values; a text that does not parse has none.
func InlineSecretKeys(data string) []string {
	var raw rawConfig
	if _, err := toml.Decode(data, &raw); err != nil {
		return nil
	}
	var keys []string
	if raw.Status.Password != "" {
		keys = append(keys, "status.password")
	}
	if raw.Alerts.URL != "" {
		keys = append(keys, "alerts.url")
	}
	if databaseURLHasSecret(raw.Storage.URL) {
		keys = append(keys, "storage.url")
	}
	for i, s := range raw.Source {
		key := fmt.Sprintf("source[%d] (%s)", i, s.Name)
		if s.Secret != "" {
			keys = append(keys, key+".secret")
		}
		if len(s.Secrets) > 0 {
			keys = append(keys, key+".secrets")
		}
	}
	for i, d := range raw.Destination {
		key := fmt.Sprintf("destination[%d] (%s)", i, d.Name)
		if d.Secret != "" {
			keys = append(keys, key+".secret")
		}
		if u, err := url.Parse(d.URL); err == nil && u.RawQuery != "" {
			keys = append(keys, key+".url")
		}
		for j, e := range d.Env { // NAME=value inline; a bare NAME takes hookbox's own
			if name, _, ok := strings.Cut(e, "="); ok && secretName(name) {
				keys = append(keys, fmt.Sprintf("%s.env[%d]", key, j))
			}
		}
		var names []string
		for name := range d.Headers {
			if secretName(name) {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			keys = append(keys, key+".headers."+name)
		}
	}
	return keys
}

// databaseURLHasSecret reports whether a database URL carries a password
// (its user's, or the TLS client key's): one without is safe to show (a
// .pgpass or a client certificate holds the secret).
func databaseURLHasSecret(raw string) bool {
	if raw == "" {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return true // cannot tell: count it
	}
	if _, ok := u.User.Password(); ok {
		return true
	}
	for k := range u.Query() {
		if k = strings.ToLower(k); k == "password" || k == "sslpassword" {
			return true
		}
	}
	return false
}

// secretName reports whether a header name suggests that its value is a
// credential.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"auth", "key", "token", "secret", "signature", "cookie", "password", "credential"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// FileModeWarnings returns what is unsafe about the modes of the config
// file at path (readable by group or others while it holds inline
// secrets) and of the data directory dataDir (anything but 0700), one
// sentence each, naming keys and modes but never a secret.
func FileModeWarnings(path, dataDir string) []string {
	var out []string
	if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o044 != 0 {
		if data, err := os.ReadFile(path); err == nil {
			if keys := InlineSecretKeys(string(data)); len(keys) > 0 {
				out = append(out, fmt.Sprintf("%s (mode %04o) is readable by %s and holds secrets inline: %s; "+
					"name environment variables instead (secret_env, password_env, url_env; install.sh keeps them in a root-only 0600 file), or chmod 600 %s",
					path, fi.Mode().Perm(), readers(fi.Mode()), strings.Join(keys, ", "), path))
			}
		}
	}
	if fi, err := os.Stat(dataDir); err == nil && fi.IsDir() && fi.Mode().Perm() != app.DataDirMode {
		out = append(out, fmt.Sprintf("data dir %s has mode %04o, not %04o: it holds every event with its headers; "+
			"hookbox serve sets %04o at start (or chmod 700 %s)", dataDir, fi.Mode().Perm(), app.DataDirMode, app.DataDirMode, dataDir))
	}
	return out
}

// readers says who besides the owner may read a file of mode m.
func readers(m fs.FileMode) string {
	switch p := m.Perm(); {
	case p&0o040 != 0 && p&0o004 != 0:
		return "its group and others"
	case p&0o040 != 0:
		return "its group"
	}
	return "others"
}
