package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/config"
)

// writeConfig writes text as dir/sub/config.toml and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sub")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const pathsSource = `
[[source]]
name = "gh"
provider = "github"
secret = "s3cret"
`

func TestLoadConfig_Paths(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	t.Run("RelativeToTheFile", func(t *testing.T) {
		path := writeConfig(t, "[server]\ndata_dir = \"./state\"\n[backup]\ndir = \"../copies\"\n"+pathsSource)
		cfg, err := config.Load(path, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Dir(path)
		if got, want := cfg.Server.DataDir, filepath.Join(dir, "state"); got != want {
			t.Errorf("data_dir = %q, want %q", got, want)
		}
		if got, want := cfg.Backup.Dir, filepath.Join(filepath.Dir(dir), "copies"); got != want {
			t.Errorf("backup.dir = %q, want %q", got, want)
		}
	})
	t.Run("DefaultDataDirBesideTheFile", func(t *testing.T) {
		path := writeConfig(t, pathsSource)
		cfg, err := config.Load(path, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := cfg.Server.DataDir, filepath.Join(filepath.Dir(path), "data"); got != want {
			t.Errorf("data_dir = %q, want %q", got, want)
		}
		if got, want := cfg.Backup.Dir, filepath.Join(filepath.Dir(path), "data", app.BackupsDirName); got != want {
			t.Errorf("backup.dir = %q, want %q", got, want)
		}
	})
	t.Run("AbsoluteKept", func(t *testing.T) {
		abs := filepath.Join(t.TempDir(), "abs")
		path := writeConfig(t, "[server]\ndata_dir = \""+abs+"\"\n"+pathsSource)
		cfg, err := config.Load(path, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Server.DataDir != abs {
			t.Errorf("data_dir = %q, want %q", cfg.Server.DataDir, abs)
		}
	})
	t.Run("CertFilesRelativeToTheFile", func(t *testing.T) {
		// A pair that is missing beside the config is reported with the
		// resolved path, so the reader sees where hookbox looked.
		path := writeConfig(t, "[server]\ncert_file = \"tls/cert.pem\"\nkey_file = \"tls/key.pem\"\n"+pathsSource)
		_, err := config.Load(path, noEnv)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(filepath.Dir(path), "tls", "cert.pem")) {
			t.Fatalf("err = %v, want it to name the cert beside the config", err)
		}
	})
}

func TestLoadConfig_Overrides(t *testing.T) {
	path := writeConfig(t, "[server]\nlisten = \"127.0.0.1:1111\"\ndata_dir = \"state\"\n"+pathsSource)
	envOf := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		name          string
		flags         config.Overrides
		env           map[string]string
		listen, data  string
		errorContains string
	}{
		{name: "File", listen: "127.0.0.1:1111", data: filepath.Join(filepath.Dir(path), "state")},
		{name: "EnvOverFile", env: map[string]string{config.EnvListen: "127.0.0.1:2222", config.EnvDataDir: "rel/here"},
			listen: "127.0.0.1:2222", data: "rel/here"},
		{name: "FlagOverEnv", flags: config.Overrides{Listen: ":3333", DataDir: "/flag/dir"},
			env:    map[string]string{config.EnvListen: "127.0.0.1:2222", config.EnvDataDir: "/env/dir"},
			listen: ":3333", data: "/flag/dir"},
		{name: "EmptyEnvIgnored", env: map[string]string{config.EnvListen: ""},
			listen: "127.0.0.1:1111", data: filepath.Join(filepath.Dir(path), "state")},
		{name: "BadEnv", env: map[string]string{config.EnvListen: "8080"}, errorContains: `HOOKBOX_LISTEN "8080" is not host:port`},
		{name: "BadFlag", flags: config.Overrides{Listen: "localhost"}, env: map[string]string{config.EnvListen: ":1"},
			errorContains: `-listen "localhost" is not host:port`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Load(path, tc.flags.Lookup(envOf(tc.env)))
			if tc.errorContains != "" {
				var ce *app.ConfigError
				if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.errorContains) {
					t.Fatalf("err = %v, want a ConfigError with %q", err, tc.errorContains)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Server.Listen != tc.listen || cfg.Server.DataDir != tc.data {
				t.Errorf("listen %q, data_dir %q; want %q, %q", cfg.Server.Listen, cfg.Server.DataDir, tc.listen, tc.data)
			}
		})
	}
	t.Run("LoadDataDirWith", func(t *testing.T) {
		t.Setenv(config.EnvDataDir, "")
		got, err := config.LoadDataDirWith(path, config.Overrides{})
		if want := filepath.Join(filepath.Dir(path), "state"); err != nil || got != want {
			t.Errorf("LoadDataDirWith = %q, %v; want %q", got, err, want)
		}
		t.Setenv(config.EnvDataDir, "/from/env")
		if got, _ := config.LoadDataDirWith(path, config.Overrides{}); got != "/from/env" {
			t.Errorf("with %s: %q", config.EnvDataDir, got)
		}
		if got, _ := config.LoadDataDirWith(path, config.Overrides{DataDir: "/from/flag"}); got != "/from/flag" {
			t.Errorf("with -data-dir: %q", got)
		}
	})
}
