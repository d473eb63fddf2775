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

// install.sh --root says what a staged root is: files to copy to the
// real paths, which the unit names; no user, no systemctl, nothing
// started; none of a running service's commands.
func TestInstallRoot_Staged(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	out := e.install()
	for _, want := range []string{
		"install.sh: staged hookbox under " + e.root + " (--root): no user was created, no owner changed, systemctl was not run, nothing was started\n",
		"This is a staged root for packaging or tests, not a running service.",
		e.path(installBin) + "  to /usr/local/bin/hookbox\n",
		e.path("etc/hookbox") + "/  to /etc/hookbox/ ",
		e.path(installUnit) + "  to /etc/systemd/system/hookbox.service\n",
		"The unit names those real paths, never " + e.root + ".",
		`in the copy set data_dir = "/var/lib/hookbox"`,
		"Or run sudo ./install.sh on that machine",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("install.sh --root does not say %q:\n%s", want, out)
		}
	}
	for _, not := range []string{"logs:     journalctl", "state: systemctl status", "ssh -N -L", "installed and enabled", "is running"} {
		if strings.Contains(out, not) {
			t.Errorf("install.sh --root says %q, which does not apply to a staged root:\n%s", not, out)
		}
	}
	if help, _ := e.run(nil, "--help"); !strings.Contains(help, "names the real paths") {
		t.Errorf("--help does not say that the unit names the real paths:\n%s", help)
	}
}
