package cli_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app/cli/clitest"
)

// The install.sh tests run the script only with --root (or with options that stop before
// installing anything): they never touch the real /etc, /usr/local/bin or systemctl. Fake
// systemctl, useradd, chown… come first in PATH and record any call, which fails the test.

// installEnv is a copy of install.sh, config.toml and the built binary in a temporary directory.
type installEnv struct {
	t       *testing.T
	dir     string // install.sh, config.toml and hookbox
	root    string // the --root prefix
	fakes   string // fake system commands
	fakeLog string // what the fakes were asked to do
}

// The commands install.sh must not run in --root mode.
var installForbidden = []string{"systemctl", "journalctl", "useradd", "userdel", "groupadd", "groupdel",
	"chown", "setpriv", "runuser", "sudo"}

func newInstallEnv(t *testing.T) *installEnv {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	dir := t.TempDir()
	e := &installEnv{t: t, dir: dir, root: filepath.Join(dir, "root"),
		fakes: filepath.Join(dir, "fakebin"), fakeLog: filepath.Join(dir, "fake-calls.log")}
	installCopy(t, filepath.Join(clitest.Root(t), "install.sh"), filepath.Join(dir, "install.sh"), 0o755)
	installCopy(t, filepath.Join(clitest.Root(t), "config.toml"), filepath.Join(dir, "config.toml"), 0o644)
	installCopy(t, clitest.Binary(t), filepath.Join(dir, "hookbox"), 0o755)
	if err := os.Mkdir(e.fakes, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range installForbidden {
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> '%s'\nexit 97\n", name, e.fakeLog)
		if err := os.WriteFile(filepath.Join(e.fakes, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if calls, err := os.ReadFile(e.fakeLog); err == nil {
			t.Errorf("install.sh ran system commands it must not run under --root:\n%s", calls)
		}
	})
	return e
}

func installCopy(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}

// run runs install.sh with args (stdin /dev/null, so no terminal) and returns its output and
// exit code. extraEnv is added to the environment.
func (e *installEnv) run(extraEnv []string, args ...string) (string, int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(e.dir, "install.sh")}, args...)...)
	cmd.Dir = e.dir
	cmd.Env = append(os.Environ(), "PATH="+e.fakes+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, extraEnv...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		e.t.Fatalf("install.sh %v timed out:\n%s", args, out)
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	case err != nil:
		e.t.Fatalf("install.sh %v: %v", args, err)
	}
	return string(out), 0
}

// install runs install.sh --root and fails the test unless it succeeds.
func (e *installEnv) install(args ...string) string {
	e.t.Helper()
	out, code := e.run(nil, append([]string{"--root", e.root}, args...)...)
	if code != 0 {
		e.t.Fatalf("install.sh --root %v: exit %d\n%s", args, code, out)
	}
	installCheckMessages(e.t, out)
	return out
}

func (e *installEnv) path(rel string) string { return filepath.Join(e.root, filepath.FromSlash(rel)) }

func (e *installEnv) read(rel string) string {
	e.t.Helper()
	data, err := os.ReadFile(e.path(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

func (e *installEnv) write(rel, text string, mode os.FileMode) {
	e.t.Helper()
	if err := os.MkdirAll(filepath.Dir(e.path(rel)), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(e.path(rel), []byte(text), mode); err != nil {
		e.t.Fatal(err)
	}
}

func (e *installEnv) exists(rel string) bool {
	_, err := os.Lstat(e.path(rel))
	return err == nil
}

func (e *installEnv) stat(rel string) os.FileInfo {
	e.t.Helper()
	fi, err := os.Stat(e.path(rel))
	if err != nil {
		e.t.Fatal(err)
	}
	return fi
}

func (e *installEnv) wantMode(rel string, want os.FileMode) {
	e.t.Helper()
	if got := e.stat(rel).Mode(); got.Perm() != want {
		e.t.Errorf("%s: mode %v, want %v", rel, got.Perm(), want)
	}
}

// noLeftovers fails when a temporary file of install.sh is left in an installed directory.
func (e *installEnv) noLeftovers() {
	e.t.Helper()
	for _, dir := range []string{"usr/local/bin", "etc/hookbox", "etc/systemd/system"} {
		entries, err := os.ReadDir(e.path(dir))
		if err != nil {
			continue
		}
		for _, ent := range entries {
			if strings.HasPrefix(ent.Name(), ".") {
				e.t.Errorf("leftover temporary file %s/%s", dir, ent.Name())
			}
		}
	}
}

// installCheckMessages: every message line of install.sh starts with "install.sh:"; the
// summary lines are indented.
func installCheckMessages(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if line != "" && !strings.HasPrefix(line, "install.sh: ") && !strings.HasPrefix(line, " ") {
			t.Errorf("output line without the install.sh: prefix: %q", line)
		}
	}
}

const (
	installUnit   = "etc/systemd/system/hookbox.service"
	installSocket = "etc/systemd/system/hookbox.socket"
	installBin    = "usr/local/bin/hookbox"
	installConfig = "etc/hookbox/config.toml"
	installEnvF   = "etc/hookbox/hookbox.env"
	installData   = "var/lib/hookbox"
)

// installUnitLines are the lines the unit must contain, whatever the port.
var installUnitLines = []string{
	"User=hookbox",
	"Group=hookbox",
	"ExecStart=/usr/local/bin/hookbox serve -config /etc/hookbox/config.toml",
	"ExecReload=/bin/kill -HUP $MAINPID",
	"StateDirectory=hookbox",
	"StateDirectoryMode=0700",
	"RuntimeDirectory=hookbox", // the local socket's /run/hookbox
	"RuntimeDirectoryMode=0750",
	"EnvironmentFile=-/etc/hookbox/hookbox.env",
	"Environment=HOOKBOX_ENV_FILE=/etc/hookbox/hookbox.env",
	"Restart=on-failure",
	"RestartSec=2",
	"TimeoutStopSec=20",
	"Type=notify", // READY=1, STOPPING=1, STATUS= (issue 46)
	"NotifyAccess=main",
	"WatchdogSec=30",
	"TimeoutStartSec=15min",   // a large data file's check at start
	"Requires=hookbox.socket", // the ports are the socket's
	"After=hookbox.socket",
	"Also=hookbox.socket",
	"CapabilityBoundingSet=", // whatever the port: the socket binds it
	"AmbientCapabilities=",
	"ProtectSystem=strict",
	"ProtectHome=true",
	"PrivateTmp=true",
	"PrivateDevices=true",
	"NoNewPrivileges=true",
	"RestrictNamespaces=true",
	"ProtectKernelTunables=true",
	"ProtectKernelModules=true",
	"ProtectKernelLogs=true",
	"ProtectControlGroups=true",
	"ProtectClock=true",
	"ProtectHostname=true",
	"LockPersonality=true",
	"MemoryDenyWriteExecute=true",
	"RestrictRealtime=true",
	"RestrictSUIDSGID=true",
	"RemoveIPC=true",
	"SystemCallArchitectures=native",
	"SystemCallFilter=@system-service",
	"SystemCallFilter=~@privileged @resources",
	"RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
	"UMask=0077",
	"ReadWritePaths=/var/lib/hookbox",
	"WantedBy=multi-user.target",
}

func installUnitHas(t *testing.T, unit string, lines ...string) {
	t.Helper()
	have := map[string]bool{}
	for _, l := range strings.Split(unit, "\n") {
		have[strings.TrimSpace(l)] = true
	}
	for _, want := range lines {
		if !have[want] {
			t.Errorf("the unit lacks the line %q", want)
		}
	}
}

// installVerifyUnit runs systemd-analyze verify on a copy of the unit whose ExecStart names
// the binary installed under --root, and fails on syntax problems (unknown keys or sections,
// values systemd cannot parse). Other complaints of a container without systemd are logged.
func installVerifyUnit(t *testing.T, e *installEnv) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze is not installed: unit not verified")
		return
	}
	dir := t.TempDir()
	unit := strings.ReplaceAll(e.read(installUnit), "ExecStart=/usr/local/bin/hookbox ", "ExecStart="+e.path(installBin)+" ")
	if err := os.WriteFile(filepath.Join(dir, "hookbox.service"), []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hookbox.socket"), []byte(e.read(installSocket)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, "verify", filepath.Join(dir, "hookbox.socket"), filepath.Join(dir, "hookbox.service")).CombinedOutput()
	syntax := regexp.MustCompile(`(?i)unknown (key|section|lvalue|system call)|failed to parse|ignoring|invalid|missing '='`)
	for _, line := range strings.Split(string(out), "\n") {
		if syntax.MatchString(line) {
			t.Errorf("systemd-analyze verify: %s", line)
		}
	}
	if err != nil {
		t.Logf("systemd-analyze verify (not a syntax problem): %v\n%s", err, out)
	}
	installSecurityScore(t, analyze, filepath.Join(dir, "hookbox.service"))
}

// installSecurityScore logs the exposure score `systemd-analyze security`
// gives the unit file (0 is best, 10 worst), where this systemd can review a
// unit offline (systemd 250 and later). It is a record, not an assertion.
func installSecurityScore(t *testing.T, analyze, unit string) {
	t.Helper()
	help, _ := exec.Command(analyze, "--help").CombinedOutput()
	if !strings.Contains(string(help), "--offline") {
		t.Log("systemd-analyze has no --offline: exposure score not recorded")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, "security", "--offline=true", "--no-pager", unit).CombinedOutput()
	m := regexp.MustCompile(`Overall exposure level for \S+: ([0-9.]+ \S+)`).FindSubmatch(out)
	if m == nil {
		t.Logf("systemd-analyze security gave no score: %v\n%s", err, out)
		return
	}
	var weak []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "✗") {
			weak = append(weak, strings.Join(strings.Fields(line)[1:2], ""))
		}
	}
	t.Logf("systemd-analyze security: exposure %s (not passed: %s)", m[1], strings.Join(weak, " "))
}

func TestInstallRoot(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	out := e.install()

	// The files, with their modes.
	e.wantMode(installBin, 0o755)
	e.wantMode(installEnvF, 0o600)
	e.wantMode(installConfig, 0o640)
	e.wantMode("etc/hookbox", 0o750)
	e.wantMode(installUnit, 0o644)
	if fi := e.stat(installData); !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: %v, want a directory with mode 0700", installData, fi.Mode())
	}
	e.noLeftovers()

	// The config: the repository's, with data_dir inside the root and listen untouched,
	// without the demo (install_clean_test.go).
	config := e.read(installConfig)
	for _, want := range []string{
		fmt.Sprintf("data_dir = %q", e.path(installData)),
		`listen = "127.0.0.1:8080"`,
	} {
		if !strings.Contains(config, want) {
			t.Errorf("installed config lacks %s:\n%s", want, config)
		}
	}
	if strings.Contains(config, `"./data"`) || strings.Count(config, "\ndata_dir") != 1 {
		t.Errorf("data_dir was not rewritten exactly once:\n%s", config)
	}
	if env := e.read(installEnvF); !strings.Contains(env, "secret_env") {
		t.Errorf("the env file does not explain itself:\n%s", env)
	}
	check, err := exec.Command(e.path(installBin), "check", "-config", e.path(installConfig)).CombinedOutput()
	if err != nil {
		t.Fatalf("installed hookbox check: %v\n%s", err, check)
	}

	// What the script tells: the status address, the sources' URLs (from hookbox check), the logs.
	for _, want := range []string{"http://127.0.0.1:8080/", "sources:  none yet", "journalctl -u hookbox",
		e.path(installConfig) + ": ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// The unit: every directive, no capability at all on port 8080.
	unit := e.read(installUnit)
	installUnitHas(t, unit, installUnitLines...)
	installUnitHas(t, unit, "CapabilityBoundingSet=", "AmbientCapabilities=")
	if strings.Contains(unit, "CAP_NET_BIND_SERVICE") {
		t.Errorf("the unit grants CAP_NET_BIND_SERVICE for port 8080:\n%s", unit)
	}
	installVerifyUnit(t, e)

	// Again: idempotent. The edited config and the env file are kept; unit and binary unchanged.
	edited := strings.Replace(config, "max_body_bytes = 1048576", "max_body_bytes = 2048", 1) + "\n# edited by the test\n"
	e.write(installConfig, edited, 0o640)
	e.write(installEnvF, "HOOKBOX_SOMETHING=kept\n", 0o600)
	binBefore := e.stat(installBin)
	unitBefore := e.stat(installUnit)
	out = e.install()
	if got := e.read(installConfig); got != edited {
		t.Errorf("the second run changed the config:\n%s", got)
	}
	if got := e.read(installEnvF); got != "HOOKBOX_SOMETHING=kept\n" {
		t.Errorf("the second run changed the env file:\n%s", got)
	}
	if !os.SameFile(binBefore, e.stat(installBin)) || !os.SameFile(unitBefore, e.stat(installUnit)) {
		t.Errorf("the second run replaced an unchanged binary or unit:\n%s", out)
	}
	if e.read(installUnit) != unit {
		t.Error("the second run changed the unit")
	}
	e.wantMode(installBin, 0o755)
	e.wantMode(installEnvF, 0o600)
	e.wantMode(installData, 0o700)
	e.noLeftovers()
	if !strings.Contains(out, "keeping the existing") {
		t.Errorf("the second run does not say it keeps the config:\n%s", out)
	}

	// A new binary replaces the old one (atomically, by rename: a new inode).
	if err := os.WriteFile(filepath.Join(e.dir, "hookbox"), append(mustRead(t, clitest.Binary(t)), 0), 0o755); err != nil {
		t.Fatal(err)
	}
	e.install()
	if os.SameFile(binBefore, e.stat(installBin)) {
		t.Error("a changed binary was not replaced")
	}
	e.wantMode(installBin, 0o755)
	e.noLeftovers()
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// hookbox.socket holds the ports (issue 46): written from listen, with its
// Backlog=, so that the service needs no capability for 443, and hookbox
// check finds the socket unit and the config agree; when listen changes,
// the socket unit follows.
func TestInstallSocketUnit(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	repo := string(mustRead(t, filepath.Join(e.dir, "config.toml")))
	if !strings.Contains(repo, `listen = "127.0.0.1:8080"`) {
		t.Fatalf("config.toml does not listen on 127.0.0.1:8080")
	}
	repo = strings.Replace(repo, `listen = "127.0.0.1:8080"`, `listen = "0.0.0.0:443"`, 1)
	if err := os.WriteFile(filepath.Join(e.dir, "config.toml"), []byte(repo), 0o644); err != nil {
		t.Fatal(err)
	}
	out := e.install()
	unit := e.read(installUnit)
	installUnitHas(t, unit, installUnitLines...)
	if strings.Contains(unit, "CAP_NET_BIND_SERVICE") {
		t.Errorf("the unit grants CAP_NET_BIND_SERVICE for port 443, which the socket binds:\n%s", unit)
	}
	socket := e.read(installSocket)
	installUnitHas(t, socket, "[Socket]", "ListenStream=0.0.0.0:443", "Backlog=4096", "WantedBy=sockets.target")
	if n := strings.Count(socket, "ListenStream="); n != 1 {
		t.Errorf("%d ListenStream= lines for plain HTTP, want 1:\n%s", n, socket)
	}
	for _, want := range []string{"created " + e.path(installSocket), "http://127.0.0.1:443/", "enable --now hookbox.socket hookbox"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	installVerifyUnit(t, e)
	installSocketAgrees(t, e)

	config := strings.Replace(e.read(installConfig), `listen = "0.0.0.0:443"`, `listen = "127.0.0.1:8443"`, 1)
	e.write(installConfig, config, 0o640)
	out = e.install()
	installUnitHas(t, e.read(installSocket), "ListenStream=127.0.0.1:8443")
	if !strings.Contains(out, "updated "+e.path(installSocket)) {
		t.Errorf("output does not say the socket unit was updated:\n%s", out)
	}
	installSocketAgrees(t, e)
}

// installSocketAgrees runs the installed hookbox check against the socket
// unit installed, with the env file's variables: no warning that they
// disagree.
func installSocketAgrees(t *testing.T, e *installEnv) {
	t.Helper()
	cmd := exec.Command(e.path(installBin), "check", "-config", e.path(installConfig), "-socket", e.path(installSocket))
	cmd.Env = append(os.Environ(), strings.Fields(e.read(installEnvF))...)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Contains(string(out), "hookbox.socket") {
		t.Errorf("hookbox check with the socket unit: %v\n%s", err, out)
	}
}

func TestInstallBrokenConfig(t *testing.T) {
	t.Parallel()

	t.Run("upgrade", func(t *testing.T) {
		t.Parallel()
		e := newInstallEnv(t)
		e.install()
		binBefore, unitBefore := e.stat(installBin), e.stat(installUnit)
		broken := strings.Replace(e.read(installConfig), "[server]\n", "[server]\nbogus_key = 1\n", 1)
		e.write(installConfig, broken, 0o640)
		// A new binary is waiting: it must not be installed either.
		if err := os.WriteFile(filepath.Join(e.dir, "hookbox"), append(mustRead(t, clitest.Binary(t)), 0), 0o755); err != nil {
			t.Fatal(err)
		}
		out, code := e.run(nil, "--root", e.root)
		if code == 0 {
			t.Fatalf("install.sh accepted a broken config:\n%s", out)
		}
		installCheckMessages(t, out)
		if want := regexp.QuoteMeta(e.path(installConfig)) + `:\d+: server\.bogus_key: unknown key`; !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("output lacks the check's message %q:\n%s", want, out)
		}
		if !strings.Contains(out, "install.sh: the config does not pass hookbox check") {
			t.Errorf("output lacks install.sh's explanation:\n%s", out)
		}
		if !os.SameFile(binBefore, e.stat(installBin)) || !os.SameFile(unitBefore, e.stat(installUnit)) {
			t.Error("a failed check still replaced the binary or the unit")
		}
		if e.read(installConfig) != broken {
			t.Error("the broken config was changed")
		}
		e.noLeftovers()
	})

	t.Run("fresh", func(t *testing.T) {
		t.Parallel()
		e := newInstallEnv(t)
		e.write(installConfig, "[server]\nlisten = \"nonsense\"\n", 0o640)
		out, code := e.run(nil, "--root", e.root)
		if code == 0 || !strings.Contains(out, "server.listen") {
			t.Fatalf("exit %d, want non-zero with the check's message about server.listen:\n%s", code, out)
		}
		if e.exists(installBin) || e.exists(installUnit) {
			t.Error("a failed check still installed the binary or the unit")
		}
		e.noLeftovers()
	})

	// secret_env is resolved from the env file only, as systemd would: not from the caller's
	// environment.
	t.Run("secret_env", func(t *testing.T) {
		t.Parallel()
		e := newInstallEnv(t)
		e.write(installConfig, fmt.Sprintf(`[server]
data_dir = %q

[[source]]
name = "shop"
provider = "shopify"
secret_env = "HOOKBOX_INSTALL_TEST_SECRET"
`, e.path(installData)), 0o640)
		// install.sh lists the variable, empty, in the env file: the service
		// is installed, not started, and the summary says what to fill in.
		out, code := e.run([]string{"HOOKBOX_INSTALL_TEST_SECRET=from-the-caller"}, "--root", e.root)
		if code != 0 || !strings.Contains(out, "HOOKBOX_INSTALL_TEST_SECRET is empty") || !strings.Contains(out, "Before it can start") {
			t.Fatalf("exit %d, want the check to miss the variable empty in the env file:\n%s", code, out)
		}
		e.write(installEnvF, "# a comment\n\nHOOKBOX_INSTALL_TEST_SECRET=\"two words\"\n", 0o600)
		out = e.install()
		if !strings.Contains(out, "source shop") {
			t.Errorf("output lacks the source:\n%s", out)
		}
	})
}

func TestInstallUninstallPurge(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	e.install()
	e.write(installData+"/hookbox.db", "data", 0o600)
	e.write(installEnvF, "SECRET=kept\n", 0o600)

	for i := 0; i < 2; i++ { // twice: uninstalling is idempotent too
		out := e.install("--uninstall")
		if e.exists(installBin) || e.exists(installUnit) {
			t.Fatalf("--uninstall left the binary or the unit:\n%s", out)
		}
		for _, rel := range []string{installConfig, installEnvF, installData + "/hookbox.db"} {
			if !e.exists(rel) {
				t.Errorf("--uninstall removed %s", rel)
			}
		}
		if !strings.Contains(out, "kept") || !strings.Contains(out, "--purge") {
			t.Errorf("--uninstall does not say what it kept:\n%s", out)
		}
	}

	// Reinstalling keeps the config and data.
	e.install()
	if e.read(installEnvF) != "SECRET=kept\n" || !e.exists(installData+"/hookbox.db") {
		t.Error("reinstalling lost the env file or the data")
	}

	// --purge needs a terminal or --yes; stdin is /dev/null here.
	out, code := e.run(nil, "--root", e.root, "--purge")
	if code == 0 || !strings.Contains(out, "--yes") {
		t.Fatalf("--purge without a terminal or --yes: exit %d\n%s", code, out)
	}
	if !e.exists(installConfig) || !e.exists(installBin) {
		t.Fatal("a refused --purge removed files")
	}

	e.install("--purge", "--yes")
	for _, rel := range []string{installBin, installUnit, "etc/hookbox", installData} {
		if e.exists(rel) {
			t.Errorf("--purge --yes left %s", rel)
		}
	}
}

func TestInstallOptions(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)

	out, code := e.run(nil, "--help")
	if code != 0 || !strings.Contains(out, "--uninstall") || !strings.Contains(out, "--root DIR") {
		t.Errorf("--help: exit %d\n%s", code, out)
	}
	out, code = e.run(nil, "--frobnicate")
	if code != 2 || !strings.HasPrefix(out, "install.sh: unknown option --frobnicate") {
		t.Errorf("an unknown option: exit %d\n%s", code, out)
	}
	out, code = e.run(nil, "--root")
	if code == 0 || !strings.HasPrefix(out, "install.sh: --root needs a directory") {
		t.Errorf("--root without a directory: exit %d\n%s", code, out)
	}
	if os.Geteuid() != 0 {
		out, code = e.run(nil)
		if code == 0 || !strings.Contains(out, "install.sh: run as root") {
			t.Errorf("without root and without --root: exit %d\n%s", code, out)
		}
	}

	// Neither a binary nor the source to build one: a clear message, nothing installed.
	if err := os.Remove(filepath.Join(e.dir, "hookbox")); err != nil {
		t.Fatal(err)
	}
	out, code = e.run(nil, "--root", e.root)
	if code == 0 || !strings.Contains(out, "install.sh: no hookbox binary next to install.sh") {
		t.Errorf("without a binary: exit %d\n%s", code, out)
	}
	if e.exists(installBin) || e.exists(installUnit) {
		t.Error("installed something without a binary")
	}
}

func TestInstallShellcheck(t *testing.T) {
	t.Parallel()
	shellcheck, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Skip("shellcheck is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, shellcheck, "install.sh")
	cmd.Dir = clitest.Root(t)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Errorf("shellcheck install.sh: %v\n%s", err, out.String())
	}
}

// ACME mode: the socket unit binds the default ports 443 and 80 (no capability), the printed addresses
// are https://domain, and a backup dir outside the data dir becomes writable for the unit.
func TestInstallACME(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	repo := string(mustRead(t, filepath.Join(e.dir, "config.toml")))
	repo = strings.Replace(repo, `listen = "127.0.0.1:8080"`, `domain = "hooks.example.com"`, 1)
	repo = strings.Replace(repo, `# dir = "/mnt/backup/hookbox"`, `dir = "/srv/hookbox-backups"`, 1)
	if err := os.WriteFile(filepath.Join(e.dir, "config.toml"), []byte(repo), 0o644); err != nil {
		t.Fatal(err)
	}
	e.install()
	// A source, its secret in the env file: its URL is on the domain.
	e.write(installConfig, e.read(installConfig)+installShopSource, 0o640)
	e.write(installEnvF, "SHOPIFY_SECRET=x\n", 0o600)
	out := e.install()
	unit := e.read(installUnit)
	installUnitHas(t, unit, installUnitLines...)
	installUnitHas(t, unit, "ReadWritePaths=-/srv/hookbox-backups")
	if strings.Contains(unit, "CAP_NET_BIND_SERVICE") {
		t.Errorf("the unit grants CAP_NET_BIND_SERVICE for 443 and 80, which the socket binds:\n%s", unit)
	}
	installUnitHas(t, e.read(installSocket), "ListenStream=443", "ListenStream=80", "Backlog=4096")
	for _, want := range []string{"status:   https://hooks.example.com/", "POST https://hooks.example.com/in/shop",
		"Paste into each platform's webhook settings:", "shop             https://hooks.example.com/in/shop",
		"certificate for hooks.example.com"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if e.exists("srv/hookbox-backups") {
		t.Error("--root created the backup dir outside the root")
	}
	installVerifyUnit(t, e)

	// http_listen on an unprivileged port and listen too: no capability.
	config := strings.Replace(e.read(installConfig), `domain = "hooks.example.com"`,
		"domain = \"hooks.example.com\"\nlisten = \":8443\"\nhttp_listen = \":8080\"", 1)
	e.write(installConfig, config, 0o640)
	out = e.install()
	if unit := e.read(installUnit); strings.Contains(unit, "CAP_NET_BIND_SERVICE") {
		t.Errorf("the unit grants CAP_NET_BIND_SERVICE for ports 8443 and 8080:\n%s", unit)
	}
	if !strings.Contains(out, "https://hooks.example.com:8443/in/shop") {
		t.Errorf("output lacks the source URL on port 8443:\n%s", out)
	}
	installUnitHas(t, e.read(installSocket), "ListenStream=8443", "ListenStream=8080")
	installSocketAgrees(t, e)
}
