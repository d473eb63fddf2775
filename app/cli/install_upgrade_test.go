package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeSystemd is a systemctl (and a curl for /healthz) that keep the units' state in files, for
// install.sh's restart and rollback staged under --root (HOOKBOX_INSTALL_FAKE_SYSTEMD=1).
type fakeSystemd struct {
	dir   string // the fakes, first in PATH
	state string // UNIT.active files, pid, log
}

func newFakeSystemd(t *testing.T, e *installEnv) *fakeSystemd {
	t.Helper()
	f := &fakeSystemd{dir: filepath.Join(e.dir, "fakesystemd"), state: filepath.Join(e.dir, "units")}
	for _, d := range []string{f.dir, f.state} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	systemctl := fmt.Sprintf(`#!/bin/sh
S=%q
echo "systemctl $*" >> "$S/log"
unit() { case $1 in *.*) echo "$1" ;; *) echo "$1.service" ;; esac; }
cmd=$1; shift
case $cmd in
is-active)
	[ "$1" = --quiet ] && shift
	if [ -e "$S/$(unit "$1").active" ]; then echo active; exit 0; fi
	echo inactive; exit 3 ;;
show) cat "$S/pid" 2>/dev/null || echo 0 ;;
start | restart)
	for u; do case $u in --*) ;; *) touch "$S/$(unit "$u").active" ;; esac; done
	echo $(( $(cat "$S/pid" 2>/dev/null || echo 100) + 1 )) > "$S/pid" ;;
stop)
	for u; do rm -f "$S/$(unit "$u").active"; done ;;
enable)
	if [ "$1" = --now ]; then shift; for u; do touch "$S/$(unit "$u").active"; done; fi ;;
esac
exit 0
`, f.state)
	// /healthz answers while the installed binary is not the one that never becomes ready, which
	// has converted the data file by then.
	curl := fmt.Sprintf("#!/bin/sh\necho \"curl $*\" >> %q/log\ncase $(%q version) in *never-ready*) echo converted > %q; exit 7 ;; esac\nexit 0\n",
		f.state, e.path(installBin), e.path(installData+"/hookbox.db"))
	for name, text := range map[string]string{"systemctl": systemctl, "curl": curl, "journalctl": "#!/bin/sh\nexit 0\n"} {
		if err := os.WriteFile(filepath.Join(f.dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// running marks both units active, as on a box where hookbox runs.
func (f *fakeSystemd) running(t *testing.T) {
	t.Helper()
	for _, u := range []string{"hookbox.socket", "hookbox.service"} {
		if err := os.WriteFile(filepath.Join(f.state, u+".active"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(f.state, "pid"), []byte("100\n"), 0o644)
}

func (f *fakeSystemd) log(t *testing.T) string {
	return string(mustRead(t, filepath.Join(f.state, "log")))
}

func (f *fakeSystemd) env(e *installEnv) []string {
	return []string{"HOOKBOX_INSTALL_FAKE_SYSTEMD=1", "HOOKBOX_INSTALL_READY_WITHIN=3",
		"PATH=" + f.dir + string(os.PathListSeparator) + e.fakes + string(os.PathListSeparator) + os.Getenv("PATH")}
}

// wrapper writes an executable script at path that says version v, and with backup and
// restore, as the running server would, copies the data file: the rest goes to the real binary.
func wrapper(t *testing.T, path, version, real, data string) {
	t.Helper()
	script := fmt.Sprintf(`#!/bin/sh
case $1 in
version) echo %q ;;
backup) for a; do out=$a; done; cp %q "$out" ;;
restore) for a; do in=$a; done; cp "$in" %q ;;
*) exec %q "$@" ;;
esac
`, version, data, data, real)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// An upgrade in place (issue 46): install.sh --upgrade FILE on a box where hookbox runs takes a
// backup of the data file, swaps the binary, restarts, and waits for /healthz. A new binary that
// never becomes ready is rolled back: the old binary and the backup go back and both units start
// again, and install.sh says so and exits 1. One that becomes ready stays. On main there is no
// --upgrade, no socket unit and no rollback.
func TestInstallUpgradeRollback(t *testing.T) {
	t.Parallel()
	e := newInstallEnv(t)
	e.install()
	real := filepath.Join(e.dir, "hookbox")
	data := e.path(installData + "/hookbox.db")
	e.write(installData+"/hookbox.db", "the data before the upgrade\n", 0o600)
	wrapper(t, e.path(installBin), "hookbox old", real, data)
	old := e.read(installBin)
	f := newFakeSystemd(t, e)
	f.running(t)

	bad := filepath.Join(e.dir, "hookbox-bad")
	wrapper(t, bad, "hookbox never-ready", real, data)
	out, code := e.run(f.env(e), "--root", e.root, "--upgrade", bad)
	if code != 1 {
		t.Fatalf("upgrade to a binary that never becomes ready: exit %d, want 1\n%s", code, out)
	}
	for _, want := range []string{"took a backup of the data file", "did not become ready within 3 s", "upgrade rolled back", "hookbox old runs again"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if e.read(installBin) != old {
		t.Error("the old binary is not back")
	}
	if got := e.read(installData + "/hookbox.db"); got != "the data before the upgrade\n" {
		t.Errorf("the data file after the rollback: %q", got)
	}
	log := f.log(t)
	for _, want := range []string{"curl -fsSk", "systemctl restart --no-block hookbox.service", "systemctl stop hookbox.socket hookbox.service", "systemctl start hookbox.socket hookbox.service"} {
		if !strings.Contains(log, want) {
			t.Errorf("systemctl was not asked %q:\n%s", want, log)
		}
	}
	if e.exists("usr/local/bin/.hookbox.previous") {
		t.Error("the previous binary was left beside the installed one")
	}

	good := filepath.Join(e.dir, "hookbox-good")
	wrapper(t, good, "hookbox new", real, data)
	out, code = e.run(f.env(e), "--root", e.root, "--upgrade", good)
	if code != 0 || !strings.Contains(out, "installed "+e.path(installBin)+" (hookbox new)") {
		t.Fatalf("upgrade to a binary that becomes ready: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "rolled back") || e.read(installBin) != string(mustRead(t, good)) {
		t.Errorf("the good upgrade was rolled back:\n%s", out)
	}
	e.noLeftovers()
}
