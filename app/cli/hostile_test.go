package cli_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/app/cli/clitest"
)

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
