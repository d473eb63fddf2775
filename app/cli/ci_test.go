package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/app/cli/clitest"
)

// The scripts in .ci/ (.ci/run is the README's test command, which
// contributors run on their own machines) end only what they started,
// by its pid or its data directory: never a process by name, never a
// service of the machine.
func TestCIScriptsEndOnlyTheirOwn(t *testing.T) {
	dir := filepath.Join(clitest.Root(t), ".ci")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	byName := regexp.MustCompile(`\b(pkill|killall|pidof)\b|\bsystemctl\s+(stop|kill|restart|disable)\b|\bservice\s+\S+\s+(stop|restart)\b|\bnginx\s+-s\b|\bkill\s+.*\$\(`)
	for _, ent := range entries {
		data, err := os.ReadFile(filepath.Join(dir, ent.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if code, _, _ := strings.Cut(line, "#"); byName.MatchString(code) {
				t.Errorf(".ci/%s:%d ends a process it did not start: %s", ent.Name(), i+1, strings.TrimSpace(line))
			}
		}
	}
}

// .ci/nginx (what .ci/run does for nginx) leaves a running nginx alone:
// a process named nginx, the stand-in for a contributor's web server,
// is still running after it, and no command that stops a service or a
// process by name was called.
func TestCINginxLeavesNginxRunning(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep")
	}
	tmp := t.TempDir()
	// A process whose name is nginx: a copy of sleep, run by this test,
	// ended by its pid.
	dummy := filepath.Join(tmp, "machine", "nginx")
	if err := os.MkdirAll(filepath.Dir(dummy), 0o755); err != nil {
		t.Fatal(err)
	}
	installCopy(t, sleep, dummy, 0o755)
	machine := exec.Command(dummy, "600")
	if err := machine.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { machine.Wait(); close(exited) }()
	t.Cleanup(func() { machine.Process.Kill(); <-exited })
	if comm, err := os.ReadFile("/proc/" + strconv.Itoa(machine.Process.Pid) + "/comm"); err == nil && strings.TrimSpace(string(comm)) != "nginx" {
		t.Fatalf("the stand-in is named %q, not nginx", comm)
	}

	// Fakes first in PATH record what the script asks of the machine; an
	// nginx among them is the installed one (so nothing is installed).
	fakes := filepath.Join(tmp, "fakebin")
	calls := filepath.Join(tmp, "calls.log")
	if err := os.Mkdir(fakes, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"systemctl", "service", "pkill", "killall", "pidof", "apt-get", "nginx"} {
		script := "#!/bin/sh\necho \"" + name + " $*\" >> '" + calls + "'\nexit 0\n"
		if err := os.WriteFile(filepath.Join(fakes, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(clitest.Root(t), ".ci", "nginx"))
	cmd.Env = append(os.Environ(), "PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf(".ci/nginx: %v\n%s", err, out)
	}
	if got, want := strings.TrimSpace(string(out)), filepath.Join(fakes, "nginx"); got != want {
		t.Errorf(".ci/nginx printed %q, want the nginx found first in PATH, %s", got, want)
	}
	if log, err := os.ReadFile(calls); err == nil {
		t.Errorf(".ci/nginx asked the machine for:\n%s", log)
	}
	stat, _ := os.ReadFile("/proc/" + strconv.Itoa(machine.Process.Pid) + "/stat")
	select {
	case <-exited:
		t.Error("the running nginx did not survive .ci/nginx")
	default:
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			t.Error("the running nginx did not survive .ci/nginx: it is a zombie")
		}
	}
}
