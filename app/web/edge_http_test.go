package web_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// edgeServer is the whole HTTP face on a real listener, behind Limit as
// serve runs it, with its log kept.
type edgeServer struct {
	addr string
	srv  *web.Server
	db   *bboltstore.DB
	log  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}
func (b *syncBuffer) String() string { b.mu.Lock(); defer b.mu.Unlock(); return b.b.String() }

func newEdgeServer(t *testing.T, server string) *edgeServer {
	t.Helper()
	cfg := mustConfig(t, "[server]\n"+server+`
[status]
user = "ops"
password = "pw-edge-1"
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
`)
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	login := testAccess(t, cfg, db)
	e := &edgeServer{db: db, log: &syncBuffer{}}
	recv := receive.New(cfg, db)
	recv.Logger = slog.New(slog.NewTextHandler(e.log, nil))
	e.srv = web.New(cfg, web.Deps{Receiver: recv, Store: db, Health: db.Ping, Access: login, LimitedDelay: 50 * time.Millisecond})
	e.srv.Logger = slog.New(slog.NewTextHandler(e.log, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go e.srv.Serve(e.srv.Limit(ln))
	t.Cleanup(func() { e.srv.Shutdown(t.Context()) })
	e.addr = ln.Addr().String()
	return e
}

func (e *edgeServer) do(t *testing.T, method, path string, body []byte, h http.Header) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+e.addr+path, bytes.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	c := &http.Client{Transport: &http.Transport{DisableCompression: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

// The body verified and stored is the body received, whatever it holds:
// a multipart form stays bytes (fasthttp would pre-parse it into a form
// and hand out that form written again), gzip bytes sent without a Content-Encoding are kept
// as they are; a body with a Content-Encoding is refused with 415 and
// nothing is stored.
func TestServer_RawBodies(t *testing.T) {
	e := newEdgeServer(t, "")
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("payload", `{"id": 1}`)
	fw, _ := mw.CreateFormFile("file", "a.bin")
	fw.Write(bytes.Repeat([]byte{0, 1, 2}, 100))
	mw.Close()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"id": 2}`))
	zw.Close()
	for _, tt := range []struct {
		name, contentType string
		body              []byte
	}{
		{"Multipart", mw.FormDataContentType(), form.Bytes()},
		// fasthttp would parse it and write it out again without the
		// preamble and the epilogue: not the bytes signed.
		{"MultipartWithPreamble", "multipart/form-data; boundary=XyZ", []byte("a preamble\r\n--XyZ\r\n" +
			"Content-Disposition: form-data; name=\"payload\"\r\n\r\n{\"id\": 3}\r\n--XyZ--\r\nan epilogue\r\n")},
		{"GzipBytes", "application/octet-stream", gz.Bytes()},
		{"Form", "application/x-www-form-urlencoded", []byte("a=1&b=%FF")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := signShop(t, tt.body, "raw-"+tt.name)
			h.Set("Content-Type", tt.contentType)
			if resp, answer := e.do(t, "POST", "/in/shop", tt.body, h); resp.StatusCode != 200 {
				t.Fatalf("answer %d %s", resp.StatusCode, answer)
			}
			_, seq, ok, err := e.db.LookupID(context.Background(), "shop", "raw-"+tt.name)
			if !ok || err != nil {
				t.Fatalf("not stored: %v", err)
			}
			ev, err := e.db.Event(context.Background(), seq)
			if err != nil || !bytes.Equal(ev.Body, tt.body) {
				t.Fatalf("stored %q, %v; want the %d bytes sent", ev.Body, err, len(tt.body))
			}
		})
	}
	h := signShop(t, gz.Bytes(), "raw-encoded")
	h.Set("Content-Encoding", "gzip")
	if resp, answer := e.do(t, "POST", "/in/shop", gz.Bytes(), h); resp.StatusCode != 415 || !strings.Contains(answer, "uncompressed") {
		t.Fatalf("Content-Encoding gzip: %d %s; want 415", resp.StatusCode, answer)
	}
	if _, _, ok, _ := e.db.LookupID(context.Background(), "shop", "raw-encoded"); ok {
		t.Fatal("a refused request was stored")
	}
	if !strings.Contains(e.log.String(), "client=127.0.0.1") {
		t.Fatalf("the refusal is not logged with the client:\n%s", e.log)
	}
}

// X-Forwarded-For and X-Forwarded-Proto count only from the peers of
// server.trusted_proxies: the client address in the log, the Secure
// cookie and HSTS follow them then, and nothing else.
func TestServer_TrustedProxies(t *testing.T) {
	forwarded := http.Header{"X-Forwarded-For": {"6.6.6.6, 203.0.113.7"}, "X-Forwarded-Proto": {"https"},
		"Content-Type": {"application/x-www-form-urlencoded"}}
	for _, tt := range []struct {
		name, server, client string
		https                bool
	}{
		{"NoneTrusted", "", "client=127.0.0.1 ", false},
		{"OtherTrusted", `trusted_proxies = ["10.0.0.0/8"]`, "client=127.0.0.1 ", false},
		{"LoopbackTrusted", `trusted_proxies = ["127.0.0.1", "::1"]`, "client=203.0.113.7 ", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEdgeServer(t, tt.server)
			resp, _ := e.do(t, "POST", "/login", []byte("user=ops&password=wrong"), forwarded)
			if resp.StatusCode != 401 {
				t.Fatalf("wrong login: %d", resp.StatusCode)
			}
			if log := e.log.String(); !strings.Contains(log, "failed login") || !strings.Contains(log, tt.client) {
				t.Fatalf("the failed login is not logged with %s:\n%s", tt.client, log)
			}
			resp, _ = e.do(t, "POST", "/login", []byte("user=ops&password=pw-edge-1"), forwarded)
			if resp.StatusCode != 303 || len(resp.Cookies()) != 1 {
				t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
			}
			if secure := resp.Cookies()[0].Secure; secure != tt.https {
				t.Errorf("session cookie Secure = %v; want %v", secure, tt.https)
			}
			resp, _ = e.do(t, "GET", "/login", nil, forwarded)
			if hsts := resp.Header.Get("Strict-Transport-Security") != ""; hsts != tt.https {
				t.Errorf("HSTS sent: %v; want %v", hsts, tt.https)
			}
		})
	}
}

// Wrong logins at the form: the first ClientBurst get 401 at once; the
// next gets 429 with Retry-After, after LimitedDelay, without a password
// check, and says so; the log has one line for them all.
func TestServer_LoginLimit(t *testing.T) {
	e := newEdgeServer(t, "")
	form := http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}
	for i := range web.ClientBurst {
		if resp, _ := e.do(t, "POST", "/login", []byte("user=ops&password=wrong"), form); resp.StatusCode != 401 {
			t.Fatalf("failure %d: %d; want 401", i+1, resp.StatusCode)
		}
	}
	start := time.Now()
	resp, page := e.do(t, "POST", "/login", []byte("user=ops&password=pw-edge-1&next=%2Fevents"), form)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(page, "Too many failed logins") {
		t.Fatalf("over the limit: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if took := time.Since(start); took < 50*time.Millisecond {
		t.Fatalf("the 429 came after %v, before the delay", took) // a floor, never a ceiling
	}
	if !strings.Contains(page, `name="next" value="/events"`) {
		t.Error("the login page lost next")
	}
	basic := http.Header{}
	basic.Set("Authorization", "Basic b3BzOnB3LWVkZ2UtMQ==") // ops:pw-edge-1
	if resp, body := e.do(t, "GET", "/api/v1/stats", nil, basic); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("Basic auth over the limit: %d %s", resp.StatusCode, body)
	}
	if n := strings.Count(e.log.String(), `msg="failed login"`); n != 1 {
		t.Fatalf("%d log lines for %d failed logins; want 1:\n%s", n, web.ClientBurst, e.log)
	}
}

// max_connections and max_connections_per_ip are held at accept: past
// them a connection is answered 503 or 429 and closed; a trusted proxy
// is bound only by the first.
func TestServer_ConnectionLimits(t *testing.T) {
	e := newEdgeServer(t, "max_connections = 5\nmax_connections_per_ip = 2\ntrusted_proxies = [\"127.0.0.3\"]")
	cases := []struct{ ip, want string }{
		{"127.0.0.1", "open"},
		{"127.0.0.1", "open"},
		{"127.0.0.1", "HTTP/1.1 429 Too Many Requests"},
		{"127.0.0.3", "open"}, // a trusted proxy: past the per-address bound
		{"127.0.0.3", "open"},
		{"127.0.0.3", "open"},
		{"127.0.0.2", "HTTP/1.1 503 Service Unavailable"}, // all five taken
	}
	// Dialled in order, then read together: an open connection says
	// nothing until its read times out.
	got := make([]string, len(cases))
	var wg sync.WaitGroup
	for i, tt := range cases {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(tt.ip)}}
		c, err := d.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(2 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				got[i] = "open"
				return
			}
			got[i] = strings.TrimSpace(line)
		}()
	}
	wg.Wait()
	for i, tt := range cases {
		if got[i] != tt.want {
			t.Errorf("connection %d from %s: %q; want %q", i+1, tt.ip, got[i], tt.want)
		}
	}
	for _, want := range []string{"client=127.0.0.1 limit=2", "client=127.0.0.2 limit=5"} {
		if !strings.Contains(e.log.String(), want) {
			t.Errorf("no refusal logged with %q:\n%s", want, e.log)
		}
	}
}

// Headers whose names suggest a secret are masked wherever headers are
// shown: the event page and the API.
func TestServer_MasksSecretHeaders(t *testing.T) {
	e := newEdgeServer(t, "")
	body := []byte(`{"id": 9}`)
	h := signShop(t, body, "masked-1")
	secret := map[string]string{"X-Auth-Key": "v-auth-key-1", "X-Api-Token": "v-api-token-2", "X-Session-Id": "v-session-3",
		"X-Db-Password": "v-password-4", "X-Webhook-Secret": "v-secret-5", "X-Csrf-Token": "v-csrf-6", "Api-Key": "v-api-key-7",
		"X-Sig": "v-sig-8", "X-Upstream-Credential": "v-credential-9"}
	for k, v := range secret {
		h.Set(k, v)
	}
	h.Set("X-Plain-Note", "shown-value")
	if resp, answer := e.do(t, "POST", "/in/shop", body, h); resp.StatusCode != 200 {
		t.Fatalf("webhook: %d %s", resp.StatusCode, answer)
	}
	_, seq, _, _ := e.db.LookupID(context.Background(), "shop", "masked-1")
	basic := http.Header{"Authorization": {"Basic b3BzOnB3LWVkZ2UtMQ=="}}
	_, api := e.do(t, "GET", fmt.Sprintf("/api/v1/events/%d", seq), nil, basic)
	_, page := e.do(t, "GET", fmt.Sprintf("/events/%d", seq), nil, basic)
	for where, text := range map[string]string{"API": api, "page": page} {
		if !strings.Contains(text, "shown-value") {
			t.Errorf("the %s does not show the plain header:\n%s", where, text)
		}
		for k, v := range secret {
			if strings.Contains(text, v) {
				t.Errorf("the %s shows %s", where, k)
			}
		}
		if strings.Contains(text, h.Get("X-Shopify-Hmac-Sha256")) {
			t.Errorf("the %s shows the signature", where)
		}
	}
}

// A connection that has sent nothing does not hold the stop: fasthttp
// counts it busy from its accept and would wait for its read timeout
// (10 s, past the grace serve gives the whole stop). Shutdown closes it
// once no handler runs, and answers the requests that came before.
func TestServer_ShutdownClosesSilentConnections(t *testing.T) {
	e := newEdgeServer(t, "")
	silent, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	body := []byte(`{"id": 1}`)
	if resp, answer := e.do(t, "POST", "/in/shop", body, signShop(t, body, "before-stop")); resp.StatusCode != 200 {
		t.Fatalf("webhook before the stop: %d %s", resp.StatusCode, answer)
	}
	// Shorter than the read timeout: the old stop waited for it and
	// returned the context's error.
	ctx, cancel := context.WithTimeout(t.Context(), web.ReadTimeout/2)
	defer cancel()
	if err := e.srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown with a silent connection open: %v", err)
	}
	silent.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := silent.Read(make([]byte, 1)); err == nil || n > 0 {
		t.Fatalf("the silent connection is still open: read %d, %v", n, err)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the silent connection is still open after Shutdown returned")
	}
}

// While Shutdown drains, a request that comes on a kept-alive connection
// is answered, with Connection: close, so that the sender opens its next
// connection to the process that follows (issue 46). Before, the answer
// did not say it, and the sender reused a connection the server closed.
func TestServer_ShutdownAnswersConnectionClose(t *testing.T) {
	e := newEdgeServer(t, "")
	conn, err := net.Dial("tcp", e.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	send := func(id string) *http.Response {
		t.Helper()
		body := []byte(`{"id": "` + id + `"}`)
		req, _ := http.NewRequest("POST", "http://"+e.addr+"/in/shop", bytes.NewReader(body))
		for k, v := range signShop(t, body, id) {
			req.Header[k] = v
		}
		if err := req.Write(conn); err != nil {
			t.Fatalf("write %s: %v", id, err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(br, req)
		if err != nil {
			t.Fatalf("answer to %s: %v", id, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := send("before"); resp.StatusCode != 200 || resp.Close {
		t.Fatalf("before the stop: %d, close %v; want 200 on a connection kept alive", resp.StatusCode, resp.Close)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- e.srv.Shutdown(context.Background()) }()
	// The stop has begun once the listener refuses new connections.
	apptest.Eventually(t, 5*time.Second, "the listener to refuse once Shutdown began", func() bool {
		c, err := net.Dial("tcp", e.addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	resp := send("draining")
	if resp.StatusCode != 200 {
		t.Fatalf("while draining: %d, want 200 (the event was committed)", resp.StatusCode)
	}
	if !resp.Close {
		t.Fatalf("while draining: answered without Connection: close (%v); the sender would keep the old process's connection", resp.Header)
	}
	if err := apptest.Recv(t, stopped, 10*time.Second, "Shutdown"); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}
