package config

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"hookbox/app"
)

// The environment variables that override server.listen and server.data_dir.
const (
	EnvListen  = "HOOKBOX_LISTEN"
	EnvDataDir = "HOOKBOX_DATA_DIR"
)

// Overrides are values from the command line (-listen, -data-dir) that take
// precedence over the environment (HOOKBOX_LISTEN, HOOKBOX_DATA_DIR), which
// takes precedence over the config file.
type Overrides struct {
	Listen  string
	DataDir string
}

// The names under which a lookup made by Overrides.Lookup answers the
// command-line values: no environment variable is called that, so the
// loader tells a flag from a variable and names the right one in errors.
const (
	flagListen  = "-listen"
	flagDataDir = "-data-dir"
)

// Lookup returns lookupEnv (os.LookupEnv when nil) answering the
// overrides too, for Load.
func (o Overrides) Lookup(lookupEnv func(string) (string, bool)) func(string) (string, bool) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	return func(name string) (string, bool) {
		switch {
		case name == flagListen && o.Listen != "":
			return o.Listen, true
		case name == flagDataDir && o.DataDir != "":
			return o.DataDir, true
		case name == flagListen || name == flagDataDir:
			return "", false
		}
		return lookupEnv(name)
	}
}

// LoadWith is Load with the command line's overrides, the
// *_env keys read from the process environment.
func LoadWith(path string, o Overrides) (*app.Config, error) {
	return Load(path, o.Lookup(nil))
}

// override returns the value of a flag, else of an environment variable,
// and which of them it came from ("" when neither is set).
func override(lookupEnv func(string) (string, bool), flagName, envName string) (value, from string) {
	if v, ok := lookupEnv(flagName); ok && v != "" {
		return v, flagName
	}
	if v, ok := lookupEnv(envName); ok && v != "" {
		return v, envName
	}
	return "", ""
}

// adjustPaths makes the raw config mean the same whatever the working
// directory: relative paths in the file (data_dir, its default included,
// cert_file, key_file, backup.dir) are taken from the config file's
// directory. Then -listen/HOOKBOX_LISTEN and -data-dir/HOOKBOX_DATA_DIR
// replace the file's values; a relative path given there is the caller's,
// from the working directory.
func adjustPaths(file string, raw *rawConfig, lookupEnv func(string) (string, bool)) error {
	dir := filepath.Dir(file)
	if raw.Server.DataDir == "" {
		raw.Server.DataDir = app.DefaultDataDir
	}
	for _, p := range []*string{&raw.Server.DataDir, &raw.Server.CertFile, &raw.Server.KeyFile, &raw.Backup.Dir} {
		*p = fromDir(dir, *p)
	}
	if v, from := override(lookupEnv, flagListen, EnvListen); from != "" {
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			return &app.ConfigError{File: file, Key: "server.listen", Reason: fmt.Sprintf("%s %q is not host:port (e.g. 127.0.0.1:8080 or :8080)", from, v)}
		}
		raw.Server.Listen = v
	}
	if v, from := override(lookupEnv, flagDataDir, EnvDataDir); from != "" {
		raw.Server.DataDir = v
	}
	return nil
}

// fromDir returns p taken from dir when it is relative. A config in the
// working directory keeps its paths as written.
func fromDir(dir, p string) string {
	if p == "" || filepath.IsAbs(p) || dir == "." {
		return p
	}
	return filepath.Join(dir, p)
}

// LoadDataDirWith reads only server.data_dir from the config file at path,
// as Load would resolve it (from the file's directory, overridden by
// o and HOOKBOX_DATA_DIR), for commands that work on the data file while
// the service is stopped: they need neither the secrets nor a valid rest
// of the file.
func LoadDataDirWith(path string, o Overrides) (string, error) {
	var raw rawConfig
	var probe struct {
		Server struct {
			DataDir string `toml:"data_dir"`
		} `toml:"server"`
	}
	if _, err := toml.DecodeFile(path, &probe); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &app.ConfigError{File: path, Reason: noConfig(path)}
		}
		return "", &app.ConfigError{File: path, Reason: err.Error()}
	}
	raw.Server.DataDir = probe.Server.DataDir
	if err := adjustPaths(path, &raw, o.Lookup(nil)); err != nil {
		return "", err
	}
	return raw.Server.DataDir, nil
}
