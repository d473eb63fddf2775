// The environment variables a config names (secret_env, secrets_env,
// password_env, url_env, smtp_url_env, a command's bare env names), read
// from the TOML alone: install.sh lists them in hookbox.env before any of
// them is set, when Load would stop at the first one missing.

package config

import (
	"errors"
	"fmt"
	"os"

	"github.com/BurntSushi/toml"

	"hookbox/app"
)

// EnvUse is one environment variable a config names, and where: the
// table and key, e.g. "[[source]] shop: secret_env".
type EnvUse struct {
	Name  string
	Where []string
}

// SourceName is a [[source]] of a config, as written.
type SourceName struct {
	Name     string
	Provider string
}

// Mentions is what a config names without validating it: the variables
// (in the order of the file's tables, each once) and the sources.
type Mentions struct {
	Env     []EnvUse
	Sources []SourceName
	// Skipped are the *_env values that are not a variable's name (a
	// secret pasted in, perhaps): their keys only, never the values.
	Skipped []string
}

// ReadMentions reads the config at path for the variables and sources it
// names. Only a file TOML cannot read is an error: the values are not
// checked (Load does that), and a value of the wrong type is passed over.
func ReadMentions(path string) (*Mentions, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &app.ConfigError{File: path, Reason: fmt.Sprintf("cannot read: %v", errors.Unwrap(err))}
	}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		return nil, &app.ConfigError{File: path, Reason: err.Error()}
	}
	m := &Mentions{}
	index := map[string]int{}
	add := func(where, name string) {
		if !envName.MatchString(name) || looksLikeSecret(name) {
			m.Skipped = append(m.Skipped, where)
			return
		}
		if i, ok := index[name]; ok {
			m.Env[i].Where = append(m.Env[i].Where, where)
			return
		}
		index[name] = len(m.Env)
		m.Env = append(m.Env, EnvUse{Name: name, Where: []string{where}})
	}
	for i, s := range tables(raw["source"]) {
		where := "[[source]] " + entryName(s, i)
		if name, ok := s["secret_env"].(string); ok && name != "" {
			add(where+": secret_env", name)
		}
		for j, name := range stringList(s["secrets_env"]) {
			add(fmt.Sprintf("%s: secrets_env[%d]", where, j), name)
		}
		name, _ := s["name"].(string)
		provider, _ := s["provider"].(string)
		m.Sources = append(m.Sources, SourceName{Name: name, Provider: provider})
	}
	for i, d := range tables(raw["destination"]) {
		where := "[[destination]] " + entryName(d, i)
		if name, ok := d["secret_env"].(string); ok && name != "" {
			add(where+": secret_env", name)
		}
		// A bare NAME passes hookbox's own value; NAME=value sets one.
		for _, e := range stringList(d["env"]) {
			if envName.MatchString(e) && !looksLikeSecret(e) {
				add(where+": env", e)
			}
		}
	}
	for _, k := range []struct{ table, key string }{{"status", "password_env"}, {"alerts", "url_env"}, {"alerts", "smtp_url_env"}, {"storage", "url_env"}} {
		t, _ := raw[k.table].(map[string]any)
		if name, ok := t[k.key].(string); ok && name != "" {
			add(fmt.Sprintf("[%s] %s", k.table, k.key), name)
		}
	}
	if st, _ := raw["storage"].(map[string]any); st["backend"] == app.BackendPostgres && st["url"] == nil && st["url_env"] == nil {
		add(`[storage] backend = "postgres" (url_env's default)`, app.DefaultDatabaseURLEnv)
	}
	return m, nil
}

// tables returns v as an array of tables ([[source]]), else nothing.
func tables(v any) []map[string]any {
	var out []map[string]any
	switch list := v.(type) {
	case []map[string]any:
		return list
	case []any:
		for _, t := range list {
			if m, ok := t.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

// stringList returns the strings of v, a list or one string.
func stringList(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, s := range v {
			if s, ok := s.(string); ok && s != "" {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// entryName is how an entry of a table array is called: its name, else its
// place ("#2" for the second).
func entryName(t map[string]any, i int) string {
	if name, ok := t["name"].(string); ok && name != "" {
		return name
	}
	return fmt.Sprintf("#%d", i+1)
}

// setItIn is what an error about a missing or empty variable adds when
// the service's environment comes from a file ($HOOKBOX_ENV_FILE): where
// to set it.
func (v *validator) setItIn() string {
	if f, ok := v.env(EnvFile); ok && f != "" {
		return ": set it in " + f
	}
	return ""
}
