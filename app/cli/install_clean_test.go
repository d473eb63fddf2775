package cli_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// A fresh install passes `hookbox check` without a warning: the installed
// config leaves out the quick start's demo (a source and a destination
// whose secrets are public, written inline) and keeps the commented
// examples that show what to add; an upgrade keeps the config as it is.
func TestInstallRoot_NoWarning(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	out := e.install()
	if strings.Contains(out, "warning:") {
		t.Errorf("a fresh install warns:\n%s", out)
	}
	if want := "sources:  none yet: add a [[source]] with secret_env = \"NAME\" to " + e.path(installConfig); !strings.Contains(out, want) {
		t.Errorf("the summary does not say what to add (%q):\n%s", want, out)
	}

	config := e.read(installConfig)
	for _, line := range strings.Split(config, "\n") {
		code, _, _ := strings.Cut(line, "#")
		code = strings.TrimSpace(code)
		if strings.HasPrefix(code, "[[") || strings.HasPrefix(code, "secret ") || strings.HasPrefix(code, "secret=") {
			t.Errorf("the installed config has %q (no source, destination, route or inline secret wanted)", line)
		}
	}
	for _, want := range []string{"# [[source]]\n# name = \"shop\"\n# provider = \"shopify\"\n# secret_env = \"SHOPIFY_SECRET\"\n",
		"# [[destination]]\n", "# [[route]]\n", "uncomment an example below"} {
		if !strings.Contains(config, want) {
			t.Errorf("the installed config lacks %q:\n%s", want, config)
		}
	}
	if strings.Contains(config, "demo-secret-change-me") || strings.Contains(config, "go run .") {
		t.Errorf("the installed config keeps the quick start's demo or its words:\n%s", config)
	}

	// hookbox check as the unit runs it (its Environment= lines and the env file).
	cmd := exec.Command(e.path(installBin), "check", "-config", e.path(installConfig))
	cmd.Env = append(installUnitEnv(t, e), "PATH="+os.Getenv("PATH"))
	check, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("hookbox check on the fresh install: %v\n%s", err, check)
	}
	if strings.Contains(string(check), "warning:") {
		t.Errorf("hookbox check on the fresh install warns:\n%s", check)
	}
	if !strings.Contains(string(check), "no source yet") {
		t.Errorf("hookbox check does not say that there is no source yet:\n%s", check)
	}

	// The repository's config.toml keeps its demo for `go run .`; an existing config is kept.
	if repo := string(mustRead(t, e.dir+"/config.toml")); !strings.Contains(repo, "name = \"demo\"") {
		t.Fatal("the repository's config.toml lost its demo source")
	}
	old := strings.Replace(config, "[server]\n", "[server]\n# the merchant's own\n", 1)
	e.write(installConfig, old, 0o640)
	if out := e.install(); !strings.Contains(out, "keeping the existing "+e.path(installConfig)) || e.read(installConfig) != old {
		t.Errorf("an upgrade did not keep the config:\n%s", out)
	}
}
