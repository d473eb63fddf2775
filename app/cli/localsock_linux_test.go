package cli_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hookbox/app/cli/clitest"
)

// socketDests is a destination and a route for the commands to act on.
const socketDests = "[[destination]]\nname = \"sink\"\nurl = \"http://127.0.0.1:9/hook\"\ntimeout = \"5s\"\n\n[[route]]\nsource = \"gh\"\nto = [\"sink\"]\n"

// noCredentialEnv is this process's environment without any HOOKBOX_
// variable (no token, no password, no listen or data dir), with extra.
func noCredentialEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HOOKBOX_") && !strings.HasPrefix(kv, "RUNTIME_DIRECTORY=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runAs runs hookbox with args and env, made to run as cred when it is
// not nil; it returns the combined output and the exit code.
func runAs(t *testing.T, bin string, cred *syscall.Credential, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		cmd.Dir = filepath.Dir(bin)
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run hookbox %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

// auditEntry is an entry of GET /api/v1/audit.
type auditEntry struct {
	Actor  string `json:"actor"`
	Via    string `json:"via"`
	From   string `json:"from"`
	Action string `json:"action"`
	Target string `json:"target"`
}

// socketAudit reads the audit log through the local socket at path (as
// this test's user, an admin there).
func socketAudit(t *testing.T, path string) []auditEntry {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}}
	resp, err := c.Get("http://local/api/v1/audit")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Items []auditEntry `json:"items"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/audit on the socket: %d, %v", resp.StatusCode, err)
	}
	return page.Items
}

// entriesOf are the entries of action in es.
func entriesOf(es []auditEntry, action string) []auditEntry {
	var out []auditEntry
	for _, e := range es {
		if e.Action == action {
			out = append(out, e)
		}
	}
	return out
}

// On the box the commands that call the running server need no password
// (issue 44): with no HOOKBOX_ variable and no [status] password, hookbox
// pause and resume go through the local socket beside the data file, the
// audit log names the Unix user who ran them, and a clean stop removes
// the socket. On both stores.
func TestLocalSocket_PauseWithoutCredential(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	eachStore(t, func(t *testing.T, st storeCase) {
		dir := t.TempDir()
		config := writeConfig(t, dir, socketDests, st.config(5*time.Second))
		p := start(t, config)
		sock := filepath.Join(dir, "data", "hookbox.sock")
		if !strings.Contains(p.logText(), "socket="+sock) {
			t.Fatalf("no socket=%s in the start line:\n%s", sock, p.logText())
		}
		fi, err := os.Stat(sock)
		if err != nil || fi.Mode().Type() != os.ModeSocket || fi.Mode().Perm() != 0o660 {
			t.Fatalf("the socket: %v, %v; want a socket, mode 0660", fi, err)
		}
		env := noCredentialEnv("E2E_GH_SECRET=" + e2eSecret)
		out, code := runAs(t, clitest.Binary(t), nil, env, "pause", "-config", config, "-reason", "ERP maintenance", "sink")
		if code != 0 || out != "paused sink\n" {
			t.Fatalf("hookbox pause with no credential: exit %d\n%s", code, out)
		}
		if out, code := runAs(t, clitest.Binary(t), nil, env, "resume", "-config", config, "sink"); code != 0 || out != "resumed sink\n" {
			t.Fatalf("hookbox resume with no credential: exit %d\n%s", code, out)
		}
		es := socketAudit(t, sock)
		want := "local:" + me.Username
		for _, action := range []string{"pause", "resume"} {
			got := entriesOf(es, action)
			if len(got) != 1 || got[0].Actor != want || got[0].Via != "socket" || got[0].From != "local" || got[0].Target != "sink" {
				t.Errorf("%s entries %+v; want one by %s via socket from local, on sink", action, got, want)
			}
		}
		p.stop(t)
		if _, err := os.Lstat(sock); !os.IsNotExist(err) {
			t.Fatalf("the socket is still there after a clean stop: %v", err)
		}
	})
}

// A socket file left by a hookbox that was killed is removed at start; one
// that something answers on is left alone, and hookbox starts without a
// socket, saying why.
func TestLocalSocket_StaleAndTaken(t *testing.T) {
	t.Run("Stale", func(t *testing.T) {
		dir := t.TempDir()
		config := writeConfig(t, dir, socketDests)
		sock := filepath.Join(dir, "data", "hookbox.sock")
		os.Mkdir(filepath.Dir(sock), 0o700)
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close() // the file stays, nothing answers: as after kill -9
		p := start(t, config)
		if !strings.Contains(p.logText(), "socket="+sock) {
			t.Fatalf("no socket=%s in the start line:\n%s", sock, p.logText())
		}
		env := noCredentialEnv("E2E_GH_SECRET=" + e2eSecret)
		if out, code := runAs(t, clitest.Binary(t), nil, env, "pause", "-config", config, "sink"); code != 0 {
			t.Fatalf("hookbox pause: exit %d\n%s", code, out)
		}
		p.stop(t)
	})
	t.Run("Taken", func(t *testing.T) {
		dir := t.TempDir()
		config := writeConfig(t, dir, socketDests)
		sock := filepath.Join(dir, "data", "hookbox.sock")
		os.Mkdir(filepath.Dir(sock), 0o700)
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		p := start(t, config)
		waitLog(t, p, "another hookbox answers on "+sock, 10*time.Second)
		p.stop(t)
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatalf("the socket someone else listens on was taken away: %v", err)
		}
		c.Close()
	})
}

// The socket file's mode decides who may connect: a Unix user outside its
// group is refused by the kernel and the command says how to get in; the
// same user in the group gets in, and the audit log names that user, as
// the kernel told the server (SO_PEERCRED). The server keeps the socket in
// $RUNTIME_DIRECTORY, as under systemd.
func TestLocalSocket_OtherUser(t *testing.T) {
	u := newServiceUser(t)
	base := t.TempDir()
	// The other user reaches every directory, so that only the socket's
	// own mode (0660, root's group) stands in its way.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := filepath.Join(base, "run")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "hookbox")
	copyExecutable(t, clitest.Shipped(t), bin)
	config := writeConfig(t, base, socketDests)
	if err := os.Chmod(config, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, config, []string{"E2E_GH_SECRET=" + e2eSecret, "RUNTIME_DIRECTORY=" + run})
	sock := filepath.Join(run, "hookbox.sock")
	if !strings.Contains(p.logText(), "socket="+sock) {
		t.Fatalf("no socket=%s in the start line:\n%s", sock, p.logText())
	}
	env := noCredentialEnv("E2E_GH_SECRET="+e2eSecret, "RUNTIME_DIRECTORY="+run)

	outsider := &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{}}
	out, code := runAs(t, bin, outsider, env, "pause", "-config", config, "sink")
	if code != 1 || !strings.Contains(out, sock+": permission denied") || !strings.Contains(out, "member of group hookbox") ||
		!strings.Contains(out, "no credential") {
		t.Fatalf("hookbox pause as %s, outside the socket's group: exit %d\n%s", u.name, code, out)
	}

	member := &syscall.Credential{Uid: uint32(u.uid), Gid: uint32(u.gid), Groups: []uint32{0}} // root's group: the socket's
	if out, code := runAs(t, bin, member, env, "pause", "-config", config, "sink"); code != 0 || out != "paused sink\n" {
		t.Fatalf("hookbox pause as %s in the socket's group: exit %d\n%s", u.name, code, out)
	}
	got := entriesOf(socketAudit(t, sock), "pause")
	if len(got) != 1 || got[0].Actor != "local:"+u.name || got[0].Via != "socket" {
		t.Fatalf("pause entries %+v; want one by local:%s via socket", got, u.name)
	}
	p.stop(t)
}
