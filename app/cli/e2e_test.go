package cli_test

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
)

// TestMain removes the binary clitest builds for these tests.
func TestMain(m *testing.M) { clitest.Main(m) }

const e2eSecret = "e2e-secret-value-9f8e7d"

// e2eEnv is what the e2e configs read from the environment: gh's secret
// and the [status] password.
func e2eEnv() []string {
	return []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e"}
}

// writeConfig writes a config serving on 127.0.0.1:0 with data in dir,
// followed by extra.
func writeConfig(t *testing.T, dir string, extra ...string) string {
	t.Helper()
	return writeConfigServer(t, dir, "max_body_bytes = 4096", extra...)
}

// writeConfigServer is writeConfig with server's lines in [server] in
// place of its small max_body_bytes.
func writeConfigServer(t *testing.T, dir, server string, extra ...string) string {
	t.Helper()
	path := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q
%s

[[source]]
name = "gh"
provider = "github"
secret_env = "E2E_GH_SECRET"
`, filepath.Join(dir, "data"), server) + strings.Join(extra, "\n")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// proc is a running hookbox.
type proc struct {
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	log  bytes.Buffer
	done chan struct{}
}

func (p *proc) logText() string { p.mu.Lock(); defer p.mu.Unlock(); return p.log.String() }

// waitLog waits until the process has logged a line containing want,
// failing with the log after limit.
func waitLog(t *testing.T, p *proc, want string, limit time.Duration) {
	t.Helper()
	apptest.Until(t, limit, func() error {
		if log := p.logText(); !strings.Contains(log, want) {
			return fmt.Errorf("no %q in the log:\n%s", want, log)
		}
		return nil
	})
}

// listenRE finds the address in "hookbox started", in either format of
// the log (listen=… or "listen":"…").
var listenRE = regexp.MustCompile(`\blisten"?[=:]"?(127\.0\.0\.1:\d+)`)

// start runs hookbox serve with the e2e secrets and waits until it logs
// its address.
func start(t *testing.T, config string) *proc {
	t.Helper()
	return startWith(t, config, []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e"})
}

// startWith runs hookbox serve with extra arguments and environment, and
// waits until it logs its address (start, with knobs).
func startWith(t *testing.T, config string, env []string, args ...string) *proc {
	t.Helper()
	return startBinary(t, clitest.Binary(t), config, env, args...)
}

// startBinary is startWith for the program at bin.
func startBinary(t *testing.T, bin, config string, env []string, args ...string) *proc {
	t.Helper()
	p, out := launchBinary(t, bin, config, env, args...)
	if p == nil {
		t.Fatalf("hookbox exited before listening:\n%s", out)
	}
	return p
}

// launch is startWith for a test in which refusing to start is an
// answer: it returns the running process, or nil and what the process
// printed before it exited.
func launch(t *testing.T, config string, env []string, args ...string) (*proc, string) {
	t.Helper()
	return launchBinary(t, clitest.Binary(t), config, env, args...)
}

// launchBinary is launch for the program at bin.
func launchBinary(t *testing.T, bin, config string, env []string, args ...string) (*proc, string) {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"serve", "-config", config}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			if m := listenRE.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	select {
	case p.addr = <-addr:
		return p, ""
	case <-p.done:
		p.cmd.Wait()
		return nil, p.logText()
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		t.Fatalf("hookbox did not start:\n%s", p.logText())
	}
	return nil, ""
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("hookbox exit: %v\n%s", err, p.logText())
	}
}

type reply struct {
	code int
	body map[string]any
}

func post(t *testing.T, addr, source string, body []byte, header map[string]string) reply {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+addr+"/in/"+source, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{code: resp.StatusCode}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, raw)
	}
	return r
}

func githubHeaders(body []byte, secret, delivery string) map[string]string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return map[string]string{
		"Content-Type":        "application/json",
		"X-GitHub-Event":      "push",
		"X-GitHub-Delivery":   delivery,
		"X-Hub-Signature-256": "sha256=" + hex.EncodeToString(m.Sum(nil)),
	}
}

func TestEndToEnd(t *testing.T) {
	dir := t.TempDir()
	config := writeConfig(t, dir)
	p := start(t, config)
	body := []byte(`{"ref": "refs/heads/main", "note": "a/b & <c>"}`)

	for _, tt := range []struct {
		name   string
		source string
		body   []byte
		header map[string]string
		code   int
		status string
	}{
		{"Accepted", "gh", body, githubHeaders(body, e2eSecret, "d-1"), 200, "accepted"},
		{"Duplicate", "gh", body, githubHeaders(body, e2eSecret, "d-1"), 200, "duplicate"},
		{"WrongSecret", "gh", body, githubHeaders(body, "other", "d-2"), 401, "error"},
		{"Tampered", "gh", append([]byte(" "), body...), githubHeaders(body, e2eSecret, "d-3"), 401, "error"},
		{"NoSignature", "gh", body, map[string]string{"X-GitHub-Delivery": "d-4"}, 401, "error"},
		{"NoEventID", "gh", body, githubHeaders(body, e2eSecret, ""), 400, "error"},
		{"UnknownSource", "nope", body, githubHeaders(body, e2eSecret, "d-5"), 404, "error"},
		{"TooLarge", "gh", bytes.Repeat([]byte("x"), 5000), githubHeaders(bytes.Repeat([]byte("x"), 5000), e2eSecret, "d-6"), 413, "error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := post(t, p.addr, tt.source, tt.body, tt.header)
			if r.code != tt.code || r.body["status"] != tt.status {
				t.Fatalf("answer = %d %v; want %d status %q", r.code, r.body, tt.code, tt.status)
			}
			if tt.code == 200 && r.body["id"] != "d-1" {
				t.Fatalf("id = %v, want d-1", r.body["id"])
			}
		})
	}

	resp, err := http.Get("http://" + p.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz = %d", resp.StatusCode)
	}

	t.Run("LockedDataFile", func(t *testing.T) {
		cmd := exec.Command(clitest.Binary(t), "serve", "-config", config)
		cmd.Env = append(os.Environ(), "E2E_GH_SECRET="+e2eSecret)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "locked by another process") {
			t.Fatalf("second instance: err %v, output:\n%s", err, out)
		}
	})

	p.stop(t)
	if strings.Contains(p.logText(), e2eSecret) {
		t.Fatal("the log contains the secret")
	}

	// The id survives a restart.
	p = start(t, config)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "d-1")); r.body["status"] != "duplicate" {
		t.Fatalf("after restart: %d %v; want duplicate", r.code, r.body)
	}
	p.stop(t)
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	config := writeConfig(t, dir)
	cmd := exec.Command(clitest.Binary(t), "check", "-config", config)
	cmd.Env = append(os.Environ(), "E2E_GH_SECRET=x")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "/in/gh") {
		t.Fatalf("check: %v\n%s", err, out)
	}

	bad := filepath.Join(dir, "bad.toml")
	os.WriteFile(bad, []byte("[[source]]\nname = \"x\"\nprovider = \"github\"\nsecret = \"s\"\ntolerence = \"5m\"\n"), 0o600)
	out, err = exec.Command(clitest.Binary(t), "check", "-config", bad).CombinedOutput()
	if err == nil || strings.TrimSpace(string(out)) != bad+":5: source[0] (x).tolerence: unknown key; did you mean tolerance?" {
		t.Fatalf("check of a bad config: %v, %q", err, out)
	}
	out, err = exec.Command(clitest.Binary(t), "serve", "-config", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "source[0] (x).tolerence: unknown key") {
		t.Fatalf("serve of a bad config: %v, %q", err, out)
	}
}
