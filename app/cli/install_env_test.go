package cli_test

import (
	"bufio"
	"os/exec"
	"strings"
	"testing"
)

// The env file of install.sh: every variable the installed config names,
// listed by `hookbox check -env`, each empty under the table and key that
// use it, values kept on every run, never shown.

const installShopSecret = "shpss-install-test-7c1d"

// installShopConfig is the installed config with public_url set and a
// Shopify source whose secret comes from SHOPIFY_SECRET.
func installShopConfig(t *testing.T, e *installEnv) string {
	t.Helper()
	config := e.read(installConfig)
	if !strings.Contains(config, "[server]\n") {
		t.Fatalf("the installed config has no [server] line:\n%s", config)
	}
	config = strings.Replace(config, "[server]\n", "[server]\npublic_url = \"https://hooks.example.com\"\n", 1)
	return config + installShopSource
}

// installShopSource is a Shopify source whose secret comes from
// SHOPIFY_SECRET.
const installShopSource = `
[[source]]
name = "shop"
provider = "shopify"
secret_env = "SHOPIFY_SECRET"
`

// installUnitEnv is the environment the unit gives the service: the
// Environment= lines of the installed unit, then the env file's NAME=value
// lines as systemd reads an EnvironmentFile (comments and blank lines
// skipped).
func installUnitEnv(t *testing.T, e *installEnv) []string {
	t.Helper()
	var env []string
	for _, line := range strings.Split(e.read(installUnit), "\n") {
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			env = append(env, v)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(e.read(installEnvF)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if !strings.Contains(line, "=") {
			t.Fatalf("the env file has a line systemd would not read: %q", line)
		}
		env = append(env, line)
	}
	return append(env, "HOOKBOX_LISTEN=127.0.0.1:0")
}

// The path of issue 32 on a staging root: install, check, a config naming
// SHOPIFY_SECRET, install again (the variable listed in hookbox.env, empty,
// with its comment; the summary says what to fill in and the URL to
// paste), a start that fails pointing at hookbox.env, the value filled
// in, install again (kept, not shown), and a start that takes a signed
// Shopify webhook.
func TestInstallRoot_EnvFile(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	e.install()
	if out, err := runBinary(e.path(installBin), "check", "-config", e.path(installConfig)); err != nil {
		t.Fatalf("installed hookbox check: %v\n%s", err, out)
	}
	header := e.read(installEnvF)

	e.write(installConfig, installShopConfig(t, e), 0o640)
	out := e.install()
	env := e.read(installEnvF)
	if want := header + "\n# [[source]] shop: secret_env\nSHOPIFY_SECRET=\n"; env != want {
		t.Errorf("the env file after the config named SHOPIFY_SECRET:\n%s\nwant:\n%s", env, want)
	}
	e.wantMode(installEnvF, 0o600)
	e.noLeftovers()
	for _, want := range []string{
		"added 1 variable(s) the config names to " + e.path(installEnvF) + ": SHOPIFY_SECRET",
		"Before it can start, fill in these variables in " + e.path(installEnvF),
		"    SHOPIFY_SECRET           [[source]] shop: secret_env\n",
		"SHOPIFY_SECRET is empty: set it in " + e.path(installEnvF),
		"Paste into each platform's webhook settings:\n",
		"    shop             https://hooks.example.com/in/shop\n",
		"sudo journalctl -u hookbox | grep generated",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("install.sh's output lacks %q:\n%s", want, out)
		}
	}
	// A staged root is not a service: nothing to restart, no tunnel to it.
	for _, not := range []string{"then: sudo systemctl restart", "ssh -N -L"} {
		if strings.Contains(out, not) {
			t.Errorf("install.sh --root says %q:\n%s", not, out)
		}
	}
	// The service as the unit starts it, the variable still empty: it
	// stops, and says where to set it.
	if p, log := launchBinary(t, e.path(installBin), e.path(installConfig), installUnitEnv(t, e)); p != nil {
		t.Fatal("hookbox started with SHOPIFY_SECRET empty")
	} else if want := "SHOPIFY_SECRET is empty: set it in /etc/hookbox/hookbox.env"; !strings.Contains(log, want) {
		t.Errorf("the failed start does not say %q:\n%s", want, log)
	}

	// Filled in: a re-run keeps the value (and does not show it), and the
	// service starts with it.
	filled := strings.Replace(env, "\nSHOPIFY_SECRET=\n", "\nSHOPIFY_SECRET="+installShopSecret+"\n", 1)
	e.write(installEnvF, filled, 0o600)
	out = e.install()
	if got := e.read(installEnvF); got != filled {
		t.Errorf("the re-run changed the filled-in env file:\n%s", got)
	}
	if strings.Contains(out, installShopSecret) || strings.Contains(out, "Before it can start") {
		t.Errorf("the re-run shows the secret, or still asks for it:\n%s", out)
	}
	if !strings.Contains(out, "keeping the existing "+e.path(installEnvF)) {
		t.Errorf("the re-run does not say it keeps the env file:\n%s", out)
	}
	p := startBinary(t, e.path(installBin), e.path(installConfig), installUnitEnv(t, e))
	body := []byte(`{"id":820982911946154500,"email":"jon@example.com"}`)
	if r := post(t, p.addr, "shop", body, shopifyHeaders(body, installShopSecret, "install-1")); r.code != 200 || r.body["status"] != "accepted" {
		t.Errorf("a webhook signed with the filled-in secret: %d %v", r.code, r.body)
	}
	if r := post(t, p.addr, "shop", body, shopifyHeaders(body, "another-secret", "install-2")); r.code != 401 {
		t.Errorf("a webhook signed with another secret: %d %v, want 401", r.code, r.body)
	}
	p.stop(t)
}

// A re-run after the config names more variables adds only those, after
// what is there, and keeps every value; a variable used twice is listed
// once; what systemd sets itself (PATH) is not written; a config with
// another mistake is refused as before.
func TestInstallRoot_EnvFileKeepsValues(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	e.install()
	shop := installShopConfig(t, e)
	e.write(installConfig, shop, 0o640)
	e.install()
	filled := strings.Replace(e.read(installEnvF), "\nSHOPIFY_SECRET=\n", "\nSHOPIFY_SECRET="+installShopSecret+"\n", 1)
	filled += "OTHER_KEPT=\"kept value\"\n" // written by hand, named by no config
	e.write(installEnvF, filled, 0o600)

	config := shop + `secrets_env = ["SHOPIFY_SECRET_OLD"]

[[source]]
name = "shop2"
provider = "shopify"
secret_env = "SHOPIFY_SECRET"

[[destination]]
name = "job"
command = ["/bin/true"]
env = ["PATH", "JOB_TOKEN", "MODE=test"]
`
	config += "\n[status]\npassword_env = \"HOOKBOX_STATUS_PASSWORD\"\n"
	e.write(installConfig, config, 0o640)
	out := e.install()
	want := filled + `
# [[source]] shop: secrets_env[0]
SHOPIFY_SECRET_OLD=

# [[destination]] job: env
JOB_TOKEN=

# [status] password_env
HOOKBOX_STATUS_PASSWORD=
`
	if got := e.read(installEnvF); got != want {
		t.Errorf("the env file:\n%s\nwant:\n%s", got, want)
	}
	e.wantMode(installEnvF, 0o600)
	if strings.Contains(out, installShopSecret) || strings.Contains(out, "kept value") {
		t.Errorf("install.sh shows a value of the env file:\n%s", out)
	}
	if !strings.Contains(out, "password: the value of HOOKBOX_STATUS_PASSWORD in "+e.path(installEnvF)) {
		t.Errorf("the summary does not say where the status password comes from:\n%s", out)
	}

	// The secrets filled in, JOB_TOKEN left empty (a command gets it empty):
	// installed, and the summary says what is still empty.
	env := e.read(installEnvF)
	env = strings.Replace(env, "\nSHOPIFY_SECRET_OLD=\n", "\nSHOPIFY_SECRET_OLD=old-value\n", 1)
	env = strings.Replace(env, "\nHOOKBOX_STATUS_PASSWORD=\n", "\nHOOKBOX_STATUS_PASSWORD=pw-install-test\n", 1)
	e.write(installEnvF, env, 0o600)
	out = e.install()
	if strings.Contains(out, "Before it can start") || !strings.Contains(out, "still empty in "+e.path(installEnvF)+" (the check passes without them): JOB_TOKEN\n") {
		t.Errorf("the summary with only JOB_TOKEN empty:\n%s", out)
	}
	if strings.Contains(out, "old-value") || strings.Contains(out, "pw-install-test") {
		t.Errorf("install.sh shows a value of the env file:\n%s", out)
	}

	// Another mistake beside an empty variable: refused as before.
	e.write(installEnvF, strings.Replace(env, "SHOPIFY_SECRET_OLD=old-value", "SHOPIFY_SECRET_OLD=", 1), 0o600)
	e.write(installConfig, strings.Replace(config, "[server]\n", "[server]\nbogus_key = 1\n", 1), 0o640)
	before := e.read(installEnvF)
	out, code := e.run(nil, "--root", e.root)
	if code == 0 || !strings.Contains(out, "the config does not pass hookbox check") {
		t.Errorf("exit %d, want the check's refusal:\n%s", code, out)
	}
	if got := e.read(installEnvF); got != before {
		t.Errorf("the refused run changed the env file:\n%s", got)
	}
}

// runBinary runs bin with args and returns its combined output.
func runBinary(bin string, args ...string) (string, error) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}
