package cli_test

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
	"hookbox/app/listen"
)

const listenShopSecret = "shpss_listen_e2e_secret"

var viewerTokenLine = regexp.MustCompile(`(?m)^(hbx_\S+)$`)

// listenProc is a running `hookbox listen`, whose stdout lines the test
// waits on.
type listenProc struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	out   strings.Builder
	errb  bytes.Buffer
	wrote chan struct{}
	done  chan struct{}
}

func startListen(t *testing.T, env []string, args ...string) *listenProc {
	t.Helper()
	p := &listenProc{wrote: make(chan struct{}, 1), done: make(chan struct{})}
	p.cmd = exec.Command(clitest.Binary(t), append([]string{"listen"}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stderr = &p.errb
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.wrote <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

func (p *listenProc) text() string { p.mu.Lock(); defer p.mu.Unlock(); return p.out.String() }

// wait waits until n lines of the output match re.
func (p *listenProc) wait(t *testing.T, re *regexp.Regexp, n int) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for len(re.FindAllString(p.text(), -1)) < n {
		select {
		case <-p.wrote:
		case <-p.done:
			if len(re.FindAllString(p.text(), -1)) < n {
				t.Fatalf("hookbox listen exited with %d lines matching %s, want %d:\n%s\nstderr:\n%s", len(re.FindAllString(p.text(), -1)), re, n, p.text(), p.errb.String())
			}
		case <-deadline:
			t.Fatalf("%d lines matching %s, want %d:\n%s", len(re.FindAllString(p.text(), -1)), re, n, p.text())
		}
	}
}

// cutProxy is a TCP proxy between listen and the VPS whose connections
// the test can cut (all of them, at once) and refuse for a while: a
// dropped network, not a stopped program.
type cutProxy struct {
	ln      net.Listener
	target  string
	mu      sync.Mutex
	conns   map[net.Conn]bool
	refuse  bool
	refused atomic.Int64
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.cut(false) })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			refuse := p.refuse
			p.mu.Unlock()
			if refuse {
				p.refused.Add(1)
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

// cut closes every connection; with refuse, new ones are closed at once
// until heal.
func (p *cutProxy) cut(refuse bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = refuse
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

func (p *cutProxy) heal() { p.mu.Lock(); p.refuse = false; p.mu.Unlock() }

// shopifyPost sends body to source on addr signed as Shopify does, with
// the secret, and returns the answer's status.
func shopifyPost(t *testing.T, addr, source, id string, body []byte) int {
	t.Helper()
	m := hmac.New(sha256.New, []byte(listenShopSecret))
	m.Write(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/in/"+source, bytes.NewReader(body))
	for k, v := range map[string]string{
		"Content-Type": "application/json", "X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(m.Sum(nil)),
		"X-Shopify-Topic": "orders/create", "X-Shopify-Webhook-Id": id, "X-Shopify-Event-Id": id,
		"X-Shopify-Shop-Domain": "listen-e2e.myshopify.com", "X-Shopify-API-Version": "2026-01",
		"X-Shopify-Triggered-At": time.Now().UTC().Format(time.RFC3339Nano),
	} {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// listenConfig is a config of a hookbox on port with a Shopify source
// "shop" (listenShopSecret) and extra.
func listenConfig(t *testing.T, dir string, port int, extra string) string {
	t.Helper()
	return listenConfigSecret(t, dir, port, listenShopSecret, extra)
}

// listenConfigSecret is listenConfig with the shop's secret.
func listenConfigSecret(t *testing.T, dir string, port int, secret, extra string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:%d"
data_dir = %q

[status]
password_env = "E2E_STATUS_PASSWORD"

[[source]]
name = "shop"
provider = "shopify"
secret = %q
%s`, port, filepath.Join(dir, "data"), secret, extra)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sourceCount is field (accepted, duplicate, rejected) of source in the
// stats of the hookbox on addr.
func sourceCount(t *testing.T, addr, source, field string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/stats", nil)
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	st := statsOf(t, string(raw))
	srcs, _ := st["sources"].([]any)
	for _, s := range srcs {
		if m, _ := s.(map[string]any); m["name"] == source {
			n, _ := m[field].(float64)
			return int(n)
		}
	}
	return 0
}

// vmHWM is the peak resident set of process pid in KiB, and its
// anonymous and file-backed parts now (bbolt's file is mapped: the pages of
// events written and read count in VmHWM as file pages).
func vmHWM(t *testing.T, pid int) (hwm, anon, file int) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "VmHWM:" {
			hwm, _ = strconv.Atoi(f[1])
		}
		if len(f) >= 2 && f[0] == "RssAnon:" {
			anon, _ = strconv.Atoi(f[1])
		}
		if len(f) >= 2 && f[0] == "RssFile:" {
			file, _ = strconv.Atoi(f[1])
		}
	}
	return hwm, anon, file
}

var (
	forwardedRE = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d \S+  shop  orders/create  (listen-\d+)  → 200 OK  \d+ ms$`)
	readyRE     = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d \S+  Ready, forwarding events of http://\S+ to http://\S+ \(source shop, topic orders/\*\)$`)
	lostRE      = regexp.MustCompile(`(?m)connection lost: .*; reconnecting in \S+`)
	// listenSecretRE is listen's first line.
	listenSecretRE = regexp.MustCompile(`(?m)^Your listen secret is (whsec_\S+): verify forwarded requests with it`)
)

// TestListen: `hookbox listen`, run as a process with a viewer token,
// forwards the events a "VPS" hookbox accepts to a "local" hookbox whose
// Shopify source has the listen secret listen printed, so that it checks
// the HMAC listen made: 100
// events sent to the VPS, 100 accepted by the local one, each once, though
// the listen connection is cut mid-way and events are accepted while it is
// down; then the VPS restarts on the same data and 10 more follow, each
// once too. The VPS's own deliveries go on. A listener that stops reading is
// dropped while events keep coming, the VPS's memory bounded.
func TestListen(t *testing.T) {
	eachStore(t, func(t *testing.T, st storeCase) { testListen(t, st) })
}

func testListen(t *testing.T, st storeCase) {
	dir := t.TempDir()
	t.Setenv("E2E_STATUS_PASSWORD", "pw-e2e") // for hookbox token create, which reads the config
	env := []string{"E2E_STATUS_PASSWORD=pw-e2e"}
	// The VPS's real destination, which must see every event as before.
	var delivered atomic.Int64
	dest := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		delivered.Add(1)
	})}
	destLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go dest.Serve(destLn)
	t.Cleanup(func() { dest.Close() })
	vpsPort := freePort(t)
	vpsConfig := listenConfig(t, filepath.Join(dir, "vps"), vpsPort, fmt.Sprintf(`
[[destination]]
name = "erp"
url = "http://%s/orders"

[[route]]
source = "shop"
to = ["erp"]
%s`, destLn.Addr(), st.config(15*time.Second))) // the default timeout
	// The VPS as it ships (its memory is measured below; the race
	// detector's shadow memory would say nothing about it); listen and
	// the local hookbox run under -race when the tests do.
	vps := startBinary(t, clitest.Shipped(t), vpsConfig, env)

	out, errOut, code := hookbox(t, nil, "token", "create", "-name", "laptop", "-role", "viewer", "-config", vpsConfig)
	if code != 0 || !viewerTokenLine.MatchString(out) {
		t.Fatalf("token create: %d\n%s%s", code, out, errOut)
	}
	token := viewerTokenLine.FindStringSubmatch(out)[1]

	// The stream carries no HMAC: listen signs each forward with the
	// listen secret it prints, derived from the token (the same from run
	// to run), which the local hookbox's Shopify source is given.
	proxy := newCutProxy(t, vps.addr)
	remote := "http://" + proxy.ln.Addr().String()
	localPort := freePort(t)
	ln := startListen(t, []string{"HOOKBOX_TOKEN=" + token}, remote, "-forward", fmt.Sprintf("http://127.0.0.1:%d/in/shop", localPort), "-source", "shop", "-topic", "orders/*")
	ln.wait(t, listenSecretRE, 1)
	secret := listenSecretRE.FindStringSubmatch(ln.text())[1]
	if secret != listen.TokenSecret(token) || secret == token {
		t.Fatalf("listen printed the secret %q; want the token's derived one", secret)
	}
	local := startWith(t, listenConfigSecret(t, filepath.Join(dir, "local"), localPort, secret, ""), env)
	ln.wait(t, readyRE, 1)

	body := func(i int) []byte {
		return []byte(fmt.Sprintf(`{"id":%d,"name":"#%d","total_price":"%d.50","note":"é \u00e9 <b>"}`+"\n", 820982911946154000+i, 1000+i, i))
	}
	send := func(from, to int) {
		for i := from; i <= to; i++ {
			if got := shopifyPost(t, vps.addr, "shop", fmt.Sprintf("listen-%03d", i), body(i)); got != http.StatusOK {
				t.Errorf("event %d: the VPS answered %d", i, got)
			}
		}
	}
	// 1–60 go out while listen forwards; the connection is cut once 20
	// are forwarded (events on their way in it are lost with it).
	sent := make(chan struct{})
	go func() { defer close(sent); send(1, 60) }()
	ln.wait(t, forwardedRE, 20)
	proxy.cut(true)
	<-sent
	// 61–80 are accepted while listen cannot connect (it tries, and says so).
	send(61, 80)
	ln.wait(t, lostRE, 2) // the cut, then a try refused
	proxy.heal()
	ln.wait(t, readyRE, 2)
	send(81, 100)
	ln.wait(t, forwardedRE, 100)

	// The VPS restarts (its hub's memory gone, its data kept): listen
	// connects again, and 101–110, accepted before it does, come first.
	vps.stop(t)
	vps = startBinary(t, clitest.Shipped(t), vpsConfig, env)
	send(101, 110)
	ln.wait(t, readyRE, 3)
	ln.wait(t, forwardedRE, 110)
	const total = 110

	seen := map[string]int{}
	for _, m := range forwardedRE.FindAllStringSubmatch(ln.text(), -1) {
		seen[m[1]]++
	}
	for i := 1; i <= total; i++ {
		if id := fmt.Sprintf("listen-%03d", i); seen[id] != 1 {
			t.Errorf("event %s forwarded %d times, want once", id, seen[id])
		}
	}
	if got := len(forwardedRE.FindAllString(ln.text(), -1)); got != total || len(seen) != total {
		t.Errorf("%d lines for %d events, want %d for %d:\n%s", got, len(seen), total, total, ln.text())
	}
	// The local hookbox checked each HMAC, listen's, with the listen
	// secret (it answers 401 otherwise) and stored each event once.
	if got := sourceCount(t, local.addr, "shop", "accepted"); got != total {
		t.Errorf("the local hookbox accepted %d events, want %d", got, total)
	}
	if got := sourceCount(t, local.addr, "shop", "rejected"); got != 0 {
		t.Errorf("the local hookbox rejected %d events", got)
	}
	// The VPS delivers as configured, listen or not.
	apptest.Within(30*time.Second, func() bool { return delivered.Load() >= total })
	if got := delivered.Load(); got != total {
		t.Errorf("the VPS delivered %d events to its destination, want %d", got, total)
	}
	t.Logf("listen's output, the cut and the restart:\n%s", strings.Join(lostRE.FindAllString(ln.text(), -1), "\n"))

	// Ctrl-C ends it cleanly.
	ln.cmd.Process.Signal(syscall.SIGINT)
	<-ln.done
	if err := ln.cmd.Wait(); err != nil {
		t.Fatalf("listen after SIGINT: %v\n%s", err, ln.errb.String())
	}

	testSlowListener(t, vps, token)
	testListenRefused(t, vps)
}

// testSlowListener: a client that asks for the stream and never reads is
// dropped by the VPS while events keep coming, and the VPS's memory stays
// flat: it grows no more than under the same load with nobody listening
// (its queue per listener is bounded, whatever the client does).
func testSlowListener(t *testing.T, vps *proc, token string) {
	const n, size = 400, 64 << 10
	pad := strings.Repeat("x", size)
	send := func(prefix string) {
		for i := 1; i <= n; i++ {
			b := []byte(fmt.Sprintf(`{"id":%d,"pad":"%s"}`, i, pad))
			if got := shopifyPost(t, vps.addr, "shop", fmt.Sprintf("%s-%03d", prefix, i), b); got != http.StatusOK {
				t.Fatalf("event %s-%d: the VPS answered %d", prefix, i, got)
			}
		}
	}
	pid := vps.cmd.Process.Pid
	hwm0, anon0, file0 := vmHWM(t, pid)
	send("alone")
	hwm1, anon1, file1 := vmHWM(t, pid)

	c, err := net.Dial("tcp", vps.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /api/v1/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n", vps.addr, token)
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil) // the head: the stream is subscribed
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the stream answered %d", resp.StatusCode)
	}
	send("stuck")
	hwm2, anon2, file2 := vmHWM(t, pid)
	// Now read: what the VPS sent before it dropped the client, then the
	// end of the answer (the last chunk, or the connection closed by the
	// write deadline), not all 400 events.
	c.SetReadDeadline(time.Now().Add(60 * time.Second))
	got, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the slow client was not dropped: %v after %d bytes", err, len(got))
	}
	events := bytes.Count(got, []byte("\nevent: event\n"))
	t.Logf("slow listener: %d of %d events of %d KiB reached it before the VPS dropped it (dropped notice: %v)",
		events, n, size>>10, bytes.Contains(got, []byte(`"kind":"dropped"`)))
	t.Logf("VPS memory (KiB): %d events alone: VmHWM %d → %d, RssAnon %d → %d, RssFile %d → %d; %d more with a client that does not read: VmHWM → %d, RssAnon → %d, RssFile → %d",
		n, hwm0, hwm1, anon0, anon1, file0, file1, n, hwm2, anon2, file2)
	if events >= n {
		t.Fatalf("the slow client got all %d events: it was not dropped", events)
	}
	// 400 events of 64 KiB are 25 MiB of bodies, 34 MiB on the stream: a
	// VPS that held them for the client would grow by that much. Its queue
	// holds at most StreamQueueBytes (2 MiB).
	if grew := anon2 - anon1; grew > 16<<10 {
		t.Errorf("the VPS's anonymous memory grew by %d KiB while a client did not read (by %d KiB under the same load alone)", grew, anon1-anon0)
	}
}

// testListenRefused: a wrong token, and a URL that is not a hookbox's
// base, end listen at once with exit 1 and a sentence that says why.
func testListenRefused(t *testing.T, vps *proc) {
	for _, tt := range []struct {
		name, token, url, want string
	}{
		{"WrongToken", "hbx_not_a_token_of_this_server", "http://" + vps.addr, "answered 401 to the token in HOOKBOX_TOKEN"},
		{"NotTheBase", "hbx_whatever", "http://" + vps.addr + "/hookbox", "has no /api/v1/stream (404)"},
	} {
		cmd := exec.Command(clitest.Binary(t), "listen", tt.url, "-forward", "http://127.0.0.1:1/")
		cmd.Env = append(os.Environ(), "HOOKBOX_TOKEN="+tt.token)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), tt.want) || strings.Contains(stderr.String(), tt.token) {
			t.Errorf("%s: %v, %q; want exit 1 with %q and no token", tt.name, err, stderr.String(), tt.want)
		}
	}
}

// TestListen_Usage: listen without its operands or a credential says so
// (exit 2) before it connects anywhere.
func TestListen_Usage(t *testing.T) {
	t.Setenv("HOOKBOX_TOKEN", "")
	t.Setenv("HOOKBOX_PASSWORD", "")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"listen", "-forward", "http://localhost:3000/"}, "give the remote hookbox's URL and -forward URL"},
		{[]string{"listen", "http://127.0.0.1:1"}, "give the remote hookbox's URL and -forward URL"},
		{[]string{"listen", "http://127.0.0.1:1", "-forward", "http://localhost:3000/"}, "no credential: set HOOKBOX_TOKEN"},
	} {
		if _, errOut, code := hookbox(t, nil, tt.args...); code != 2 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %q; want 2 with %q", tt.args, code, errOut, tt.want)
		}
	}
	t.Setenv("HOOKBOX_TOKEN", "hbx_x")
	if _, errOut, code := hookbox(t, nil, "listen", "ftp://example.com", "-forward", "http://localhost:3000/"); code != 1 || !strings.Contains(errOut, `the remote URL "ftp://example.com" is not an http:// or https:// URL`) {
		t.Errorf("ftp remote: exit %d, %q", code, errOut)
	}
	// A -secret that some scheme would refuse is refused before anything
	// (Standard Webhooks base64-decodes what follows whsec_), unquoted.
	if _, errOut, code := hookbox(t, nil, "listen", "http://127.0.0.1:1", "-forward", "http://localhost:3000/", "-secret", "whsec_short-secret"); code != 2 || !strings.Contains(errOut, "a listen secret is whsec_ and the base64 of 24 to 64 bytes") || strings.Contains(errOut, "short-secret") {
		t.Errorf("-secret whsec_short-secret: exit %d, %q", code, errOut)
	}
}
