package cli_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/app/cli/clitest"
	"hookbox/app/provider"
	"hookbox/storage"
)

// closedPort returns a local address nothing listens on; its port is
// outside the range the kernel hands to other tests' listeners on port 0.
func closedPort(t *testing.T) string {
	return "127.0.0.1:" + strconv.Itoa(freePort(t))
}

// Secret values a run of hookbox knows. The destination secret's key is
// also checked without its whsec_ prefix.
var runSecrets = []string{
	"status-pw-Secret-1a2b", "gh-old-Secret-3c4d", "gh-new-Secret-5e6f", "whsec_stripeSecret7g8h",
	"token-Secret-9i0j", "hmac-env-Secret-k1l2", "dest-query-Secret-m3n4", "dest-header-Secret-o5p6",
	"whsec_ZGVzdGluYXRpb24tU2VjcmV0LXM5dDA=", "ZGVzdGluYXRpb24tU2VjcmV0LXM5dDA=", "alert-url-Secret-q7r8",
	"erring-query-Secret-u1v2",
}

// A full run, at debug level, with secrets for sources, destinations, the
// status login and the alert URL; valid and forged requests, failed logins,
// deliveries that fail until dead, an alert that cannot be sent: no secret
// value appears in the log or in any answer.
func TestSecurity_NoSecretsInLog(t *testing.T) {
	erring := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(500)
		io.WriteString(w, "internal trouble")
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go erring.Serve(ln)
	t.Cleanup(func() { erring.Close() })

	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	toml := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q
max_body_bytes = 4096

[status]
user = "ops"
password = "status-pw-Secret-1a2b"

[[source]]
name = "gh"
provider = "github"
secrets = ["gh-old-Secret-3c4d", "gh-new-Secret-5e6f"]

[[source]]
name = "stripe"
provider = "stripe"
secret = "whsec_stripeSecret7g8h"

[[source]]
name = "own"
provider = "token"
secret = "token-Secret-9i0j"

[[source]]
name = "hm"
provider = "hmac"
secret_env = "SEC_HMAC_SECRET"
signature_header = "X-Sig"
id = "{header.X-Id}"

[[destination]]
name = "down"
url = "http://%s/hook?token=dest-query-Secret-m3n4"
secret = "whsec_ZGVzdGluYXRpb24tU2VjcmV0LXM5dDA="
headers = { Authorization = "Bearer dest-header-Secret-o5p6" }
timeout = "1s"
retry = ["10ms", "10ms"]

[[destination]]
name = "erring"
url = "http://%s/hook?key=erring-query-Secret-u1v2"
retry = ["10ms"]

[[route]]
source = "gh"
to = ["down", "erring"]

[[route]]
source = "own"
to = ["down"]

[alerts]
dead_letters_over = 0
url = "http://%s/services/alert-url-Secret-q7r8"
check = "@every 1s"
`, filepath.Join(dir, "data"), closedPort(t), ln.Addr(), closedPort(t))
	if err := os.WriteFile(config, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startWith(t, config, []string{"SEC_HMAC_SECRET=hmac-env-Secret-k1l2"}, "-log-level", "debug")

	var answers bytes.Buffer
	do := func(method, path string, body []byte, h http.Header) int {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+p.addr+path, bytes.NewReader(body))
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		fmt.Fprintf(&answers, "%s %s: %d %v\n", method, path, resp.StatusCode, resp.Header)
		io.Copy(&answers, resp.Body)
		return resp.StatusCode
	}
	sign := func(source, secret string, s provider.Settings, body []byte, id string, at time.Time) http.Header {
		t.Helper()
		s.Secrets = [][]byte{[]byte(secret)}
		h, err := provider.Sign(map[string]string{"gh": "github", "stripe": "stripe", "own": "token", "hm": "hmac"}[source],
			s, body, "", id, "push", at)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	now := time.Now()
	body := []byte(`{"id": "evt_sec_1", "type": "charge.succeeded"}`)
	hm := provider.Settings{SignatureHeader: "X-Sig"}
	for _, tt := range []struct {
		source string
		h      http.Header
		code   int
	}{
		{"gh", sign("gh", "gh-new-Secret-5e6f", hm, body, "gh-1", now), 200},
		{"gh", sign("gh", "gh-old-Secret-3c4d", hm, body, "gh-2", now), 200},
		{"gh", sign("gh", "not-the-secret", hm, body, "gh-3", now), 401},
		{"gh", http.Header{"X-Github-Delivery": {"gh-4"}}, 401},
		{"stripe", sign("stripe", "whsec_stripeSecret7g8h", hm, body, "", now), 200},
		{"stripe", sign("stripe", "whsec_stripeSecret7g8h", hm, body, "", now.Add(-time.Hour)), 401},
		{"own", sign("own", "token-Secret-9i0j", hm, body, "own-1", now), 200},
		{"own", http.Header{"Authorization": {"Bearer token-Secret-9i0X"}}, 401},
		{"hm", func() http.Header {
			h := sign("hm", "hmac-env-Secret-k1l2", hm, body, "", now)
			h.Set("X-Id", "hm-1")
			return h
		}(), 200},
		{"hm", http.Header{"X-Sig": {"00"}, "X-Id": {"hm-2"}}, 401},
	} {
		if code := do("POST", "/in/"+tt.source, body, tt.h); code != tt.code {
			t.Fatalf("POST /in/%s: %d, want %d", tt.source, code, tt.code)
		}
	}
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	if code := do("POST", "/login", []byte(url.Values{"user": {"ops"}, "password": {"status-pw-Secret-1a2X"}}.Encode()), form); code != 401 {
		t.Fatalf("failed login: %d", code)
	}
	if code := do("POST", "/login", []byte(url.Values{"user": {"ops"}, "password": {"status-pw-Secret-1a2b"}}.Encode()), form); code != 303 {
		t.Fatalf("login: %d", code)
	}
	basic := func(user, pass string) http.Header {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(user, pass)
		return r.Header
	}
	if code := do("GET", "/api/v1/stats", nil, basic("ops", "wrong")); code != 401 {
		t.Fatalf("API with a wrong password: %d", code)
	}
	if code := do("GET", "/api/v1/dead-letters", nil, basic("ops", "status-pw-Secret-1a2b")); code != 200 {
		t.Fatalf("API: %d", code)
	}

	// Wait for the deliveries to die and for the alert to fail.
	deadline := time.Now().Add(20 * time.Second)
	for !(strings.Contains(p.logText(), "delivery dead") && strings.Contains(p.logText(), "send alert")) {
		if time.Now().After(deadline) {
			t.Fatalf("no dead delivery or alert in the log:\n%s", p.logText())
		}
		time.Sleep(20 * time.Millisecond)
	}
	do("GET", "/api/v1/dead-letters", nil, basic("ops", "status-pw-Secret-1a2b"))
	p.stop(t)

	log := p.logText()
	for _, want := range []string{"webhook rejected", "failed login", "delivery dead", "send alert", "delivery will retry"} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %q: the run did not cover it", want)
		}
	}
	for _, secret := range runSecrets {
		if strings.Contains(log, secret) {
			t.Errorf("the log contains the secret %q", secret)
		}
		if strings.Contains(answers.String(), secret) {
			t.Errorf("an answer contains the secret %q", secret)
		}
	}
	if t.Failed() {
		t.Logf("log:\n%s", log)
	}
}

// The data directory and file are created private (0700, 0600) whatever
// the umask says.
func TestSecurity_DataFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := t.TempDir()
	p := start(t, writeConfig(t, dir))
	p.stop(t)
	for path, want := range map[string]os.FileMode{
		filepath.Join(dir, "data"):                   0o700 | os.ModeDir,
		filepath.Join(dir, "data", storage.FileName): 0o600,
	} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
}

// ---- The hostile suite ----
//
// Each test below runs one attack from issue 15 against hookbox as it
// ships and checks the answer (never 5xx), that the process is still
// serving, and its peak resident memory (VmHWM) against peakRSSLimit.

// peakRSSLimit is the memory a small VPS can give hookbox under attack.
const peakRSSLimit = 256 << 20

// shippedBinary is hookbox built as it ships, without the race detector,
// whose shadow memory and slowdown would say nothing about the memory and
// latency bounds checked here. Under -race it is built once, beside the
// race binary; the race detector still runs these code paths in the
// package tests.
func shippedBinary(t *testing.T) string {
	t.Helper()
	return clitest.Shipped(t)
}

// hostile is a hookbox under attack: the default max_body_bytes (1 MiB,
// so a bomb that fits is read in full, as it would be from the Internet),
// a github source, public metrics, and a generated status password
// checked with bcrypt, the expensive case.
type hostile struct {
	*proc
	password string
}

var generatedRE = regexp.MustCompile(`generated a status page password.* password=(\S+)`)

func startHostile(t *testing.T, extra ...string) *hostile {
	t.Helper()
	config := writeConfigServer(t, t.TempDir(), "# max_body_bytes: the default", append([]string{"[status]\nmetrics_public = true"}, extra...)...)
	h := &hostile{proc: startBinary(t, shippedBinary(t), config, []string{"E2E_GH_SECRET=" + e2eSecret})}
	m := generatedRE.FindStringSubmatch(h.logText())
	if m == nil {
		t.Fatalf("no generated password in the log:\n%s", h.logText())
	}
	h.password = m[1]
	return h
}

// peakRSS is the process's peak resident memory (VmHWM), in bytes.
func (p *proc) peakRSS(t *testing.T) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("hookbox is gone: %v\n%s", err, p.logText())
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", p.cmd.Process.Pid)
	return 0
}

// survived checks that hookbox still answers /healthz and that its peak
// memory stayed under peakRSSLimit, and logs the peak.
func (h *hostile) survived(t *testing.T) {
	t.Helper()
	resp, err := http.Get("http://" + h.addr + "/healthz")
	if err != nil {
		t.Fatalf("hookbox does not answer after the attack: %v\n%s", err, h.logText())
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz after the attack: %d", resp.StatusCode)
	}
	peak := h.peakRSS(t)
	t.Logf("peak RSS (VmHWM) of hookbox: %.1f MiB", float64(peak)/(1<<20))
	if peak >= peakRSSLimit {
		t.Fatalf("peak RSS %d MiB, over %d MiB", peak>>20, peakRSSLimit>>20)
	}
}

// clientFrom is an HTTP client whose connections come from the local
// address ip (all of 127.0.0.0/8 is this machine), as if from another
// host; it keeps up to conns connections, follows no redirect and asks
// for no compression.
func clientFrom(ip string, conns int) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{
		Transport: &http.Transport{DialContext: d.DialContext, MaxConnsPerHost: conns, MaxIdleConnsPerHost: conns,
			DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       30 * time.Second,
	}
}

// exchange makes one request and returns the answer with its body read.
func exchange(c *http.Client, method, url string, body []byte, h http.Header) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp, raw, err
}

func header(m map[string]string) http.Header {
	h := http.Header{}
	for k, v := range m {
		h.Set(k, v)
	}
	return h
}

// gzipped compresses b into one gzip member.
func gzipped(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Compressed bodies: gzip bombs of one and two layers, to a known and an
// unknown source, get 415 at once and nothing is inflated; a signature
// over anything but the received bytes never gets 200.
func TestHostile_CompressedBodies(t *testing.T) {
	h := startHostile(t)
	c := clientFrom("127.0.0.1", 1)
	member := gzipped(t, make([]byte, 1<<20))        // 1 MiB of zeros in about 1 KiB
	single := bytes.Repeat(member, 500)              // 500 gzip members: 500 MiB inflated
	double := gzipped(t, bytes.Repeat(member, 1000)) // a gzip of a 1 GiB bomb
	t.Logf("single-layer bomb: %d bytes (500 MiB inflated); double layer: %d bytes (1 GiB)", len(single), len(double))
	n := 0
	for _, target := range []string{"gh", "nosuch"} {
		for _, tt := range []struct {
			name, encoding string
			body           []byte
		}{
			{"Gzip", "gzip", single},
			{"GzipGzip", "gzip, gzip", double},
			{"Deflate", "deflate", single},
			{"Brotli", "br", single},
			{"GzipIdentity", "identity, gzip", single},
		} {
			t.Run(target+"/"+tt.name, func(t *testing.T) {
				n++
				hd := header(githubHeaders(tt.body, e2eSecret, fmt.Sprintf("bomb-%d", n)))
				hd.Set("Content-Encoding", tt.encoding)
				start := time.Now()
				resp, raw, err := exchange(c, "POST", "http://"+h.addr+"/in/"+target, tt.body, hd)
				if err != nil {
					t.Fatalf("no answer: %v", err)
				}
				t.Logf("Content-Encoding %q, %d bytes to /in/%s: %d %s in %v", tt.encoding, len(tt.body), target, resp.StatusCode, raw, time.Since(start).Round(time.Millisecond))
				if resp.StatusCode != 415 && resp.StatusCode != 413 {
					t.Fatalf("answer %d %s; want 415 (or 413)", resp.StatusCode, raw)
				}
			})
		}
	}

	// Signatures over anything but the bytes received.
	inflated := []byte(`{"ref": "refs/heads/main"}`)
	for _, tt := range []struct {
		name         string
		body, signed []byte
	}{
		{"OverTheInflateError", []byte("AAAA"), []byte("gzip: invalid header")},
		{"OverTheInflateErrorOfThisFasthttp", []byte("AAAA"), []byte("unexpected EOF")},
		{"OverTheInflatedText", gzipped(t, inflated), inflated},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hd := header(githubHeaders(tt.signed, e2eSecret, "sig-"+tt.name))
			hd.Set("Content-Encoding", "gzip")
			resp, raw, err := exchange(c, "POST", "http://"+h.addr+"/in/gh", tt.body, hd)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%q with Content-Encoding gzip, signed over %q: %d %s", tt.body, tt.signed, resp.StatusCode, raw)
			if resp.StatusCode == 200 || resp.StatusCode >= 500 {
				t.Fatalf("answer %d %s", resp.StatusCode, raw)
			}
		})
	}
	// The same source takes the bytes as sent, whatever they are, when no
	// coding is claimed: gzip bytes signed as they are.
	gz := gzipped(t, inflated)
	for i, enc := range []string{"", "identity"} {
		hd := header(githubHeaders(gz, e2eSecret, fmt.Sprintf("raw-gzip-%d", i)))
		if enc != "" {
			hd.Set("Content-Encoding", enc)
		}
		resp, raw, err := exchange(c, "POST", "http://"+h.addr+"/in/gh", gz, hd)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("gzip bytes signed as sent, Content-Encoding %q: %v %v %s", enc, err, resp.StatusCode, raw)
		}
	}
	h.survived(t)
}

// /metrics stays valid and names only configured sources after
// /in/%FF%FE and 1,000 random unknown sources, all sent on the one
// keep-alive connection whose buffers an unsafe label would point into.
func TestHostile_MetricsLabels(t *testing.T) {
	h := startHostile(t)
	c := clientFrom("127.0.0.1", 1)
	base := "http://" + h.addr
	metrics := func() string {
		t.Helper()
		resp, raw, err := exchange(c, "GET", base+"/metrics", nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("/metrics: %d %s", resp.StatusCode, raw)
		}
		return string(raw)
	}
	body := []byte(`{"zen": "metrics"}`)
	if resp, raw, err := exchange(c, "POST", base+"/in/gh", body, header(githubHeaders(body, e2eSecret, "m-1"))); err != nil || resp.StatusCode != 200 {
		t.Fatalf("genuine webhook: %v %v %s", err, resp, raw)
	}
	metrics()
	rng := rand.New(rand.NewPCG(15, 15))
	paths := []string{"/in/%FF%FE"}
	for i := range 1000 {
		var name string
		switch i % 4 {
		case 0:
			name = fmt.Sprintf("%x", rng.Uint64())
		case 1: // bytes of any value, escaped
			for range 1 + rng.IntN(12) {
				name += fmt.Sprintf("%%%02X", rng.IntN(256))
			}
		case 2:
			name = "gh" + strings.Repeat("x", 1+rng.IntN(300))
		default:
			name = "metrics" + strconv.Itoa(i)
		}
		paths = append(paths, "/in/"+strings.ReplaceAll(name, "%2F", "%2E"))
	}
	for i, p := range paths {
		resp, raw, err := exchange(c, "POST", base+p, body, header(githubHeaders(body, e2eSecret, "u-"+strconv.Itoa(i))))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 404 {
			t.Fatalf("POST %s: %d %s; want 404", p, resp.StatusCode, raw)
		}
		if i%100 == 0 {
			metrics()
		}
	}
	text := metrics()
	labels := map[string]bool{}
	for _, m := range regexp.MustCompile(`source="([^"]*)"`).FindAllStringSubmatch(text, -1) {
		labels[m[1]] = true
	}
	for l := range labels {
		if l != "gh" && l != "_unknown" {
			t.Errorf("/metrics has a series for source %q", l)
		}
	}
	if want := `hookbox_requests_total{outcome="not_found",source="_unknown"} 1001`; !strings.Contains(text, want) {
		t.Errorf("/metrics lacks %s", want)
	}
	if want := `hookbox_requests_total{outcome="accepted",source="gh"} 1`; !strings.Contains(text, want) {
		t.Errorf("/metrics lacks %s", want)
	}
	// Unknown sources are logged with their path and the client, a few
	// lines for the thousand.
	lines := 0
	for _, l := range strings.Split(h.logText(), "\n") {
		if strings.Contains(l, "unknown source") {
			lines++
			if !regexp.MustCompile(`path="?/in/`).MatchString(l) || !strings.Contains(l, "client=127.0.0.1") {
				t.Errorf("log line without the path or the client: %s", l)
			}
		}
	}
	if lines == 0 || lines > 5 {
		t.Errorf("%d log lines about unknown sources for 1,001 requests; want 1 to 5", lines)
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
	h.survived(t)
}

// login posts the status login with next and returns the answer.
func (h *hostile) login(t *testing.T, c *http.Client, query string, form url.Values) *http.Response {
	t.Helper()
	resp, raw, err := exchange(c, "POST", "http://"+h.addr+"/login"+query, []byte(form.Encode()),
		http.Header{"Content-Type": {"application/x-www-form-urlencoded"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode >= 500 {
		t.Fatalf("POST /login%s: %d %s", query, resp.StatusCode, raw)
	}
	return resp
}

// After a login, next sends the browser to a path of this site or to /:
// never elsewhere, and never with a header of the attacker's.
func TestHostile_LoginNext(t *testing.T) {
	h := startHostile(t)
	c := clientFrom("127.0.0.1", 2)
	for _, next := range []string{
		"/\r\nSet-Cookie: x=y", "/%0d%0aSet-Cookie:%20x=y\r\n", "/\nSet-Cookie: x=y", "/\t/evil.example/x", "/\x00x",
		"//evil.example", "/\\evil.example", "\\/evil.example", "https://evil.example/", "/\x7f", "/ok\r\nX: y",
		"javascript:alert(1)", " /x", "",
	} {
		resp, raw, err := exchange(c, "GET", "http://"+h.addr+"/login?next="+url.QueryEscape(next), nil, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("GET /login?next=%q: %v %v", next, err, resp)
		}
		if !strings.Contains(string(raw), `name="next" value="/"`) {
			t.Errorf("GET /login?next=%q: the form does not carry next=/", next)
		}
		for _, tt := range []struct {
			how   string
			query string
			form  url.Values
		}{
			{"form", "", url.Values{"user": {"admin"}, "password": {h.password}, "next": {next}}},
			{"query", "?next=" + url.QueryEscape(next), url.Values{"user": {"admin"}, "password": {h.password}}},
		} {
			resp := h.login(t, c, tt.query, tt.form)
			if resp.StatusCode != 303 || resp.Header.Get("Location") != "/" {
				t.Errorf("next %q in the %s: %d, Location %q; want 303 to /", next, tt.how, resp.StatusCode, resp.Header.Get("Location"))
			}
			for _, sc := range resp.Header.Values("Set-Cookie") {
				if !strings.HasPrefix(sc, "hookbox_session=") {
					t.Errorf("next %q in the %s: injected Set-Cookie %q", next, tt.how, sc)
				}
			}
			if len(resp.Header) > 0 && resp.Header.Get("X") != "" {
				t.Errorf("next %q in the %s: injected header X", next, tt.how)
			}
		}
	}
	// A path of this site is kept, from the form (where the login page puts it).
	good := "/events?source=gh&status=dead"
	if resp := h.login(t, c, "", url.Values{"user": {"admin"}, "password": {h.password}, "next": {good}}); resp.StatusCode != 303 || resp.Header.Get("Location") != good {
		t.Errorf("next %q: %d, Location %q", good, resp.StatusCode, resp.Header.Get("Location"))
	}
	h.survived(t)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

// The CSRF token counts only from the form body or the X-CSRF-Token
// header: one in the query string (which leaks through logs and Referer)
// is refused.
func TestHostile_CSRFFromQuery(t *testing.T) {
	h := startHostile(t)
	c := clientFrom("127.0.0.1", 2)
	resp := h.login(t, c, "", url.Values{"user": {"admin"}, "password": {h.password}})
	var cookie string
	for _, ck := range resp.Cookies() {
		if ck.Name == "hookbox_session" {
			cookie = ck.Name + "=" + ck.Value
		}
	}
	if resp.StatusCode != 303 || cookie == "" {
		t.Fatalf("login: %d, cookie %q", resp.StatusCode, cookie)
	}
	withCookie := func(h http.Header) http.Header { h.Set("Cookie", cookie); return h }
	resp, raw, err := exchange(c, "GET", "http://"+h.addr+"/dead-letters", nil, withCookie(http.Header{}))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /dead-letters: %v %v", err, resp)
	}
	m := csrfRE.FindStringSubmatch(string(raw))
	if m == nil {
		t.Fatalf("no CSRF token on the page:\n%s", raw)
	}
	token := m[1]
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	for _, tt := range []struct {
		name, path, body string
		h                http.Header
		want             int
	}{
		{"Query", "/dead-letters/replay?csrf=" + token + "&confirm=yes", "", form.Clone(), 403},
		{"QueryWithWrongBody", "/dead-letters/replay?csrf=" + token, "csrf=0000&confirm=yes", form.Clone(), 403},
		{"Body", "/dead-letters/replay", "csrf=" + token + "&confirm=yes", form.Clone(), 303},
		{"Header", "/dead-letters/replay", "confirm=yes", func() http.Header { h := form.Clone(); h.Set("X-CSRF-Token", token); return h }(), 303},
		{"QueryLogout", "/logout?csrf=" + token, "", form.Clone(), 403},
	} {
		resp, raw, err := exchange(c, "POST", "http://"+h.addr+tt.path, []byte(tt.body), withCookie(tt.h))
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != tt.want {
			t.Errorf("%s: POST %s with body %q: %d %s; want %d", tt.name, tt.path, tt.body, resp.StatusCode, raw, tt.want)
		}
	}
	h.survived(t)
}

// rawExchange writes req on a fresh connection and reads one answer; it
// reports whether the server then closed the connection.
func rawExchange(t *testing.T, addr, req string) (*http.Response, string, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = br.ReadByte()
	return resp, string(raw), errors.Is(err, io.EOF)
}

// Two differing Content-Length headers (or one beside Transfer-Encoding)
// frame the body two ways: a proxy in front and hookbox could each take a
// different request from the same bytes. They get 400 and the connection
// is closed, so nothing after them is read as a request.
func TestHostile_DuplicateContentLength(t *testing.T) {
	h := startHostile(t)
	body := `{"zen": "content-length"}`
	smuggled := "POST /in/gh HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
	head := func(id string) string {
		var b strings.Builder
		b.WriteString("POST /in/gh HTTP/1.1\r\nHost: hookbox\r\n")
		for k, v := range githubHeaders([]byte(body), e2eSecret, id) {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
		return b.String()
	}
	short, long := strconv.Itoa(len(body)), strconv.Itoa(len(body)+len(smuggled))
	for _, tt := range []struct {
		name, framing string
		want          int
	}{
		{"ShortThenLong", "Content-Length: " + short + "\r\nContent-Length: " + long + "\r\n", 400},
		{"LongThenShort", "Content-Length: " + long + "\r\ncontent-length: " + short + "\r\n", 400},
		{"ChunkedAndLength", "Transfer-Encoding: chunked\r\nContent-Length: " + short + "\r\n", 400},
		{"LengthAndChunked", "Content-Length: " + short + "\r\nTransfer-Encoding: chunked\r\n", 400},
		{"SameTwice", "Content-Length: " + short + "\r\nContent-Length: " + short + "\r\n", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := head("cl-"+tt.name) + tt.framing + "\r\n" + body + smuggled
			if strings.Contains(tt.framing, "chunked") {
				req = head("cl-"+tt.name) + tt.framing + "\r\n" + fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(body), body) + smuggled
			}
			resp, raw, closed := rawExchange(t, h.addr, req)
			t.Logf("%s: %d %s (connection closed after: %v)", tt.name, resp.StatusCode, raw, closed)
			if resp.StatusCode != tt.want {
				t.Fatalf("answer %d %s; want %d", resp.StatusCode, raw, tt.want)
			}
			if tt.want == 400 && !closed {
				t.Fatal("the connection stays open after a request framed two ways")
			}
		})
	}
	h.survived(t)
}

// latencies summarises the durations of genuine requests.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func (l latencies) String() string {
	return fmt.Sprintf("%d requests, p50 %v, p90 %v, p99 %v, max %v", len(l), l.pct(0.5).Round(time.Microsecond),
		l.pct(0.9).Round(time.Microsecond), l.pct(0.99).Round(time.Microsecond), l.pct(1).Round(time.Microsecond))
}

// webhooks sends genuine webhooks from ip on senders connections, each
// pausing pause between requests, until stop is closed; every one must be
// accepted.
func webhooks(t *testing.T, addr, ip string, senders int, pause time.Duration, stop <-chan struct{}) func() latencies {
	var (
		mu   sync.Mutex
		all  latencies
		errs []string
		wg   sync.WaitGroup
	)
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clientFrom(ip, 1)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
				body := []byte(fmt.Sprintf(`{"sender": %d, "n": %d}`, s, i))
				start := time.Now()
				resp, raw, err := exchange(c, "POST", "http://"+addr+"/in/gh", body, header(githubHeaders(body, e2eSecret, fmt.Sprintf("%s-%d-%d", ip, s, i))))
				took := time.Since(start)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err.Error())
				case resp.StatusCode != 200:
					errs = append(errs, fmt.Sprintf("%d %s", resp.StatusCode, raw))
				default:
					all = append(all, took)
				}
				mu.Unlock()
			}
		}()
	}
	return func() latencies {
		wg.Wait()
		if len(errs) > 0 {
			t.Errorf("%d genuine webhooks failed, e.g. %s", len(errs), errs[0])
		}
		return all
	}
}

// 3,000 slow connections (from a dozen addresses, each under the
// per-address limit) drip their headers: peak memory stays bounded and
// genuine webhooks keep being accepted meanwhile.
func TestHostile_SlowConnections(t *testing.T) {
	h := startHostile(t)
	const conns, addrs = 3000, 12
	stop := make(chan struct{})
	var open, peak, dialFailed atomic.Int64
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(10+i%addrs))}, Timeout: 5 * time.Second}
			for {
				conn, err := d.Dial("tcp", h.addr)
				if err != nil {
					dialFailed.Add(1)
					return
				}
				n := open.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				io.WriteString(conn, "POST /in/gh HTTP/1.1\r\nHost: hookbox\r\n")
				cut := false
				for j := 0; !cut; j++ {
					select {
					case <-stop:
						conn.Close()
						open.Add(-1)
						return
					case <-time.After(time.Second):
					}
					_, err := fmt.Fprintf(conn, "X-Slow-%d: a\r\n", j)
					cut = err != nil
				}
				conn.Close()
				open.Add(-1)
			}
		}()
	}
	time.Sleep(2 * time.Second) // all connected
	done := webhooks(t, h.addr, "127.0.0.2", 2, 20*time.Millisecond, stop)
	time.Sleep(12 * time.Second) // past the read timeout: hookbox cuts them and they come back
	close(stop)
	wg.Wait()
	lat := done()
	t.Logf("slow connections: %d open at most (%d dials failed); genuine webhooks meanwhile: %v", peak.Load(), dialFailed.Load(), lat)
	if peak.Load() < conns*9/10 {
		t.Errorf("only %d slow connections were open at once", peak.Load())
	}
	if len(lat) < 100 {
		t.Errorf("only %d genuine webhooks got through", len(lat))
	}
	h.survived(t)
}

// One address gets at most max_connections_per_ip (256) connections; the
// rest are answered 429 and closed at once, and other addresses are
// served meanwhile.
func TestHostile_ConnectionsPerAddress(t *testing.T) {
	h := startHostile(t)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, 30)}, Timeout: 5 * time.Second}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	refused, answered := 0, ""
	for range 300 {
		conn, err := d.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, conn := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			buf := make([]byte, 512)
			n, err := conn.Read(buf)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return // held open by hookbox, waiting for a request
			}
			mu.Lock()
			defer mu.Unlock()
			refused++
			if n > 0 {
				answered = string(buf[:n])
			}
		}()
	}
	wg.Wait()
	t.Logf("300 connections from 127.0.1.30: %d refused; an answer: %q", refused, answered)
	if refused != 300-256 {
		t.Errorf("%d connections refused; want %d", refused, 300-256)
	}
	if !strings.HasPrefix(answered, "HTTP/1.1 429 ") || !strings.Contains(answered, "Retry-After:") {
		t.Errorf("a refused connection was answered %q; want 429 with Retry-After", answered)
	}
	stop := make(chan struct{})
	done := webhooks(t, h.addr, "127.0.0.2", 1, 10*time.Millisecond, stop)
	time.Sleep(time.Second)
	close(stop)
	if lat := done(); len(lat) == 0 {
		t.Error("no genuine webhook from another address got through")
	}
	if !strings.Contains(h.logText(), "client=127.0.1.30") {
		t.Errorf("the refusals are not logged with the client address:\n%s", h.logText())
	}
	h.survived(t)
}

// 400 connections send wrong Basic credentials for 10 s. Failed attempts
// are limited per address and in all before any bcrypt runs, so genuine
// webhooks keep p99 under 100 ms; a script with the right password keeps
// working (its credential was verified once and is cached); the log gets
// a few lines, each naming the client.
func TestHostile_AuthFlood(t *testing.T) {
	h := startHostile(t)
	base := "http://" + h.addr
	script := clientFrom("127.0.0.3", 1)
	right := http.Header{}
	right.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:"+h.password)))
	if resp, raw, err := exchange(script, "GET", base+"/api/v1/stats", nil, right); err != nil || resp.StatusCode != 200 {
		t.Fatalf("right password before the flood: %v %v %s", err, resp, raw)
	}

	// The same senders without an attack first: what the machine gives
	// when nobody attacks, to read a failure by.
	calm := make(chan struct{})
	baseline := webhooks(t, h.addr, "127.0.0.2", 4, 20*time.Millisecond, calm)
	time.Sleep(3 * time.Second)
	close(calm)
	t.Logf("genuine webhooks before the flood: %v", baseline())

	const flood = 10 * time.Second
	stop := make(chan struct{})
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		errs  int
		wg    sync.WaitGroup
	)
	// Each attacker writes its request on a raw keep-alive connection and
	// reads the answer, again and again: a guesser in a closed loop, at
	// little cost to this (under -race, instrumented) test process, which
	// shares the machine's CPU with hookbox.
	for _, ip := range []string{"127.0.1.40", "127.0.1.41"} {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		for g := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := fmt.Sprintf("GET /api/v1/stats HTTP/1.1\r\nHost: hookbox\r\nAuthorization: Basic %s\r\n\r\n",
					base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("admin:guess-%s-%d", ip, g))))
				var conn net.Conn
				var br *bufio.Reader
				defer func() {
					if conn != nil {
						conn.Close()
					}
				}()
				for {
					select {
					case <-stop:
						return
					default:
					}
					code, err := 0, error(nil)
					if conn == nil {
						if conn, err = d.Dial("tcp", h.addr); err == nil {
							br = bufio.NewReader(conn)
						}
					}
					if err == nil {
						conn.SetDeadline(time.Now().Add(10 * time.Second))
						if _, err = io.WriteString(conn, req); err == nil {
							var resp *http.Response
							if resp, err = http.ReadResponse(br, nil); err == nil {
								_, err = io.Copy(io.Discard, resp.Body)
								resp.Body.Close()
								code = resp.StatusCode
							}
						}
					}
					if err != nil && conn != nil {
						conn.Close()
						conn = nil
					}
					mu.Lock()
					if err != nil {
						errs++
					} else {
						codes[code]++
					}
					mu.Unlock()
				}
			}()
		}
	}
	done := webhooks(t, h.addr, "127.0.0.2", 4, 20*time.Millisecond, stop)
	var scriptErrs []string
	var scriptLat latencies
	scriptDone := make(chan struct{})
	go func() {
		defer close(scriptDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			start := time.Now()
			resp, raw, err := exchange(script, "GET", base+"/api/v1/stats", nil, right)
			if err != nil || resp.StatusCode != 200 {
				scriptErrs = append(scriptErrs, fmt.Sprintf("%v %v %s", err, resp, raw))
				continue
			}
			scriptLat = append(scriptLat, time.Since(start))
		}
	}()
	time.Sleep(flood)
	close(stop)
	wg.Wait()
	lat := done()
	<-scriptDone
	t.Logf("wrong Basic auth from 400 connections for %v: answers %v, %d connection errors", flood, codes, errs)
	t.Logf("genuine webhooks meanwhile: %v", lat)
	t.Logf("a script with the right password meanwhile: %v", scriptLat)
	for code, n := range codes {
		if code != 401 && code != 429 {
			t.Errorf("%d answers %d to wrong credentials", n, code)
		}
	}
	if codes[429] == 0 {
		t.Error("no attempt was refused with 429: failed logins are not limited")
	}
	if len(scriptErrs) > 0 {
		t.Errorf("the script with the right password failed %d times, e.g. %s", len(scriptErrs), scriptErrs[0])
	}
	if p99 := lat.pct(0.99); len(lat) < 200 || p99 >= 100*time.Millisecond {
		t.Errorf("genuine webhooks under the flood: %v; want p99 under 100 ms", lat)
	}
	lines := 0
	for _, l := range strings.Split(h.logText(), "\n") {
		if strings.Contains(l, "login") && strings.Contains(l, "level=WARN") {
			lines++
			if !strings.Contains(l, "client=127.0.1.4") {
				t.Errorf("a security log line without the client address: %s", l)
			}
		}
	}
	t.Logf("%d warning lines about logins in the log", lines)
	if lines == 0 || lines > 20 {
		t.Errorf("%d warning lines about logins; want a few (rate-limited)", lines)
	}
	h.survived(t)
}
