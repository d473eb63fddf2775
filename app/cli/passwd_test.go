package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/storage/postgres/pgtest"
)

// buffer is an output read while a command writes it.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) { b.mu.Lock(); defer b.mu.Unlock(); return b.b.Write(p) }
func (b *buffer) String() string              { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

// freePort returns a 127.0.0.1 address nothing listens on just now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// writeTestConfig writes a config in a new directory: a github source
// "gh" with a route of topic push to a destination on sinkURL (none when
// ""), data in ./data beside it, and extra appended.
func writeTestConfig(t *testing.T, sinkURL, extra string) string {
	t.Helper()
	text := "[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"gh-secret\"\n"
	if sinkURL != "" {
		text += fmt.Sprintf("[[destination]]\nname = \"sink\"\nurl = %q\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"+
			"[[route]]\nsource = \"gh\"\ntopics = [\"push\"]\nto = [\"sink\"]\n", sinkURL)
	}
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(text+extra), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runCmd runs the command line in this process and returns its exit code
// and output (stdout, then stderr).
func runCmd(args ...string) (int, string) {
	var out, errOut bytes.Buffer
	code := Run(context.Background(), args, &out, &errOut)
	return code, out.String() + errOut.String()
}

// running is a serve started in this process.
type running struct {
	addr   string
	out    *buffer
	cancel func()
	code   chan int
}

// startServe runs serve with config on addr until the test ends, and
// waits until it has started.
func startServe(t *testing.T, config, addr string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{addr: addr, out: &buffer{}, cancel: cancel, code: make(chan int, 1)}
	go func() { r.code <- Run(ctx, []string{"serve", "-config", config, "-listen", addr}, r.out, r.out) }()
	apptest.Until(t, 30*time.Second, func() error {
		select {
		case code := <-r.code:
			t.Fatalf("serve ended with %d:\n%s", code, r.out)
		default:
		}
		if !strings.Contains(r.out.String(), "hookbox started") {
			return fmt.Errorf("serve did not start:\n%s", r.out)
		}
		return nil
	})
	t.Cleanup(r.stop)
	return r
}

// stop ends serve and waits for it; a second call does nothing.
func (r *running) stop() {
	r.cancel()
	select {
	case <-r.code:
	case <-time.After(30 * time.Second):
	}
	r.code = make(chan int, 1)
	r.code <- 0
}

var passwordLine = regexp.MustCompile(`generated a status page password.* password=(\S+)`)

// apiStatus answers GET /api/v1/stats with password's status code.
func apiStatus(t *testing.T, addr, password string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/stats", nil)
	req.SetBasicAuth("admin", password)
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// pipeStdin makes text passwd's stdin for the rest of the test.
func pipeStdin(t *testing.T, text string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.WriteString(text)
	w.Close()
	old := stdin
	stdin = r
	t.Cleanup(func() { stdin = old; r.Close() })
}

// TestPassword_NeverLost: a start that fails to listen after opening the
// data file shows no password and stores none; the next start shows one
// that works; passwd replaces it on a running server and on a stopped one.
func TestPassword_NeverLost(t *testing.T) {
	config := writeTestConfig(t, "", "")
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	code, out := runCmd("serve", "-config", config, "-listen", busy.Addr().String())
	if code != 1 || !strings.Contains(out, "address already in use") {
		t.Fatalf("serve on a port in use: %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(config), "data", "hookbox.db")); err != nil {
		t.Fatalf("the failed start did not get as far as the data file: %v", err)
	}
	if strings.Contains(out, "password=") {
		t.Fatalf("a start that failed showed a password:\n%s", out)
	}

	addr := freePort(t)
	srv := startServe(t, config, addr)
	m := passwordLine.FindStringSubmatch(srv.out.String())
	if m == nil {
		t.Fatalf("the good start showed no password:\n%s", srv.out)
	}
	shown := m[1]
	if got := apiStatus(t, addr, shown); got != http.StatusOK {
		t.Fatalf("login with the shown password: %d", got)
	}

	t.Run("WrongPasswordCLI", func(t *testing.T) {
		t.Setenv("HOOKBOX_PASSWORD", "not-the-password")
		code, out := runCmd("replay", "-config", config, "-listen", addr, "-all")
		if code != 1 || !strings.Contains(out, "wrong user or password") || strings.Contains(out, "not-the-password") {
			t.Fatalf("replay with a wrong password: %d %q", code, out)
		}
		t.Setenv("HOOKBOX_PASSWORD", shown)
		if code, out := runCmd("replay", "-config", config, "-listen", addr, "-all"); code != 0 {
			t.Fatalf("replay with the shown password: %d %q", code, out)
		}
	})
	t.Run("Running", func(t *testing.T) {
		// A browser logged in with the old password.
		jar, _ := cookiejar.New(nil)
		browser := &http.Client{Jar: jar, Timeout: 10 * time.Second,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := browser.PostForm("http://"+addr+"/login", url.Values{"user": {"admin"}, "password": {shown}, "next": {"/"}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		sessionStatus := func() int {
			resp, err := browser.Get("http://" + addr + "/api/v1/stats")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if got := sessionStatus(); got != http.StatusOK {
			t.Fatalf("the session of the old password: %d", got)
		}
		pipeStdin(t, "a new password for a running server\n")
		code, out := runCmd("passwd", "-config", config)
		if code != 0 || !strings.Contains(out, "the running server") {
			t.Fatalf("passwd: %d\n%s", code, out)
		}
		if got := apiStatus(t, addr, "a new password for a running server"); got != http.StatusOK {
			t.Fatalf("the new password: %d", got)
		}
		if got := apiStatus(t, addr, shown); got != http.StatusUnauthorized {
			t.Fatalf("the old password (verified, so cached, a moment ago): %d", got)
		}
		if got := sessionStatus(); got != http.StatusUnauthorized {
			t.Fatalf("the session of the old password goes on: %d", got)
		}
	})
	t.Run("Stopped", func(t *testing.T) {
		srv.stop()
		code, out := runCmd("passwd", "-config", config, "-generate")
		m := regexp.MustCompile(`user admin, password (\S+)`).FindStringSubmatch(out)
		if code != 0 || m == nil || !strings.Contains(out, "is not running") {
			t.Fatalf("passwd -generate: %d\n%s", code, out)
		}
		again := startServe(t, config, addr)
		if strings.Contains(again.out.String(), "password=") {
			t.Fatalf("a password was generated although one was set:\n%s", again.out)
		}
		if got := apiStatus(t, addr, m[1]); got != http.StatusOK {
			t.Fatalf("the password passwd printed: %d", got)
		}
	})
	t.Run("ErrInConfig", func(t *testing.T) {
		fixed := writeTestConfig(t, "", "[status]\npassword = \"from-the-config\"\n")
		code, out := runCmd("passwd", "-config", fixed, "-generate")
		if code != 1 || !strings.Contains(out, "set in the config") || strings.Contains(out, "user admin, password") {
			t.Fatalf("passwd with a password in the config: %d\n%s", code, out)
		}
	})
	t.Run("ErrShortFromStdin", func(t *testing.T) {
		pipeStdin(t, "short\n")
		if code, out := runCmd("passwd", "-config", config); code != 1 || !strings.Contains(out, "at least 8") {
			t.Fatalf("passwd with a short password: %d\n%s", code, out)
		}
	})
}

// TestPassword_Postgres: on PostgreSQL passwd stores the hash in the
// database, and a running node takes it up.
func TestPassword_Postgres(t *testing.T) {
	t.Setenv("HOOKBOX_TEST_PASSWD_DB", pgtest.URL(t))
	config := writeTestConfig(t, "", "[storage]\nbackend = \"postgres\"\nurl_env = \"HOOKBOX_TEST_PASSWD_DB\"\n[backup]\nschedule = \"off\"\n")
	addr := freePort(t)
	srv := startServe(t, config, addr)
	if passwordLine.FindStringSubmatch(srv.out.String()) == nil {
		t.Fatalf("no password shown:\n%s", srv.out)
	}
	pipeStdin(t, "shared by every node\n")
	code, out := runCmd("passwd", "-config", config)
	if code != 0 || !strings.Contains(out, "running nodes take it up") {
		t.Fatalf("passwd: %d\n%s", code, out)
	}
	apptest.Until(t, 15*time.Second, func() error {
		if apiStatus(t, addr, "shared by every node") != http.StatusOK {
			return fmt.Errorf("the running node never took the new password up:\n%s", srv.out)
		}
		return nil
	})
}
