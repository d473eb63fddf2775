package web_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/receive"
)

// logBuffer is a log destination safe for the server's goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) lines(substr string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return out
}

// Mistakes are visible: a webhook to an unknown source is counted in
// /metrics under one label and logged with its path and client; accepted
// events are logged with source, id and topic; failed logins and bad
// signatures name the client, taken from the socket: an X-Forwarded-For
// from a peer that is not a trusted proxy changes nothing.
func TestLogs_VisibleMistakes(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), logger)
	if r := f.send("order-1", "orders/create", `{"id": 1}`); r.StatusCode != 200 {
		t.Fatalf("send: %d", r.StatusCode)
	}
	forwarded := func(method, path, body string, h http.Header) int {
		req, _ := http.NewRequest(method, f.base+path, strings.NewReader(body))
		for k, v := range h {
			req.Header[k] = v
		}
		req.Header.Set("X-Forwarded-For", "203.0.113.9")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := forwarded("POST", "/in/shopp-typo", "{}", nil); got != 404 {
		t.Fatalf("unknown source: %d", got)
	}
	if got := forwarded("POST", "/in/shop", `{"id": 2}`, http.Header{"X-Shopify-Hmac-Sha256": {"bm90IGl0"}}); got != 401 {
		t.Fatalf("bad signature: %d", got)
	}
	if got := forwarded("GET", "/api/v1/stats", "", http.Header{"Authorization": {"Basic b3BzOndyb25n"}}); got != 401 {
		t.Fatalf("wrong password: %d", got)
	}
	for _, c := range []struct{ what, substr string }{
		{"accepted event", `msg="webhook accepted" source=shop event=order-1 topic=orders/create`},
		{"unknown source", `path=/in/shopp-typo client=127.0.0.1`},
		{"bad signature", `msg="webhook rejected" source=shop reason=`},
		{"failed login", `msg="failed login" client=127.0.0.1`},
	} {
		if len(logs.lines(c.substr)) != 1 {
			t.Errorf("%s: want one line with %s in the log:\n%s", c.what, c.substr, logs.lines(""))
		}
	}
	for _, l := range logs.lines("msg=\"webhook rejected\"") {
		if !strings.Contains(l, "client=127.0.0.1") {
			t.Errorf("rejection without the socket's address: %s", l)
		}
	}
	if l := logs.lines("203.0.113.9"); len(l) > 0 {
		t.Errorf("a header from an untrusted peer made it into the log: %s", l)
	}
	_, metrics := f.get("/metrics")
	if want := `hookbox_requests_total{outcome="not_found",source="_unknown"} 1`; !strings.Contains(string(metrics), want) {
		t.Errorf("metrics lack %s", want)
	}
}

// With the peer listed in server.trusted_proxies, the client in a
// security line is the one the proxy names.
func TestLogs_TrustedProxyClient(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	f := openFixtureWith(t, t.TempDir(), time.Now().UTC(), logger, "[server]\ntrusted_proxies = [\"127.0.0.1\"]\n")
	req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(`{"id": 2}`))
	req.Header.Set("X-Shopify-Hmac-Sha256", "bm90IGl0")
	req.Header.Set("X-Forwarded-For", "203.0.113.9")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if l := logs.lines(`msg="webhook rejected"`); len(l) != 1 || !strings.Contains(l[0], "client=203.0.113.9") {
		t.Errorf("rejection lines: %q", l)
	}
}

// Accepted events are logged one by one up to the limit a second; then
// one line says how many were left out.
func TestLogs_AcceptedRateLimited(t *testing.T) {
	var logs logBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	now := time.Now().UTC().Truncate(time.Second)
	f := openFixture(t, t.TempDir(), now, logger)
	n := receive.AcceptedLogPerSecond + 7
	for i := range n {
		f.send(fmt.Sprint("busy-", i), "orders/create", `{"id": 1}`)
	}
	if got := len(logs.lines(`msg="webhook accepted"`)); got != receive.AcceptedLogPerSecond {
		t.Errorf("%d accepted lines in one second; want %d", got, receive.AcceptedLogPerSecond)
	}
	if l := logs.lines("suppressed="); len(l) != 0 {
		t.Errorf("suppressed line before the second ended: %q", l)
	}
	// The next second's first event brings the count of those left out.
	f.advance(time.Second)
	f.send("busy-next", "orders/create", `{"id": 1}`)
	if l := logs.lines("suppressed="); len(l) != 1 || !strings.Contains(l[0], "suppressed=7 ") {
		t.Errorf("suppressed lines: %q", l)
	}
	if got := len(logs.lines(`msg="webhook accepted"`)); got != receive.AcceptedLogPerSecond+1 {
		t.Errorf("%d accepted lines; want %d", got, receive.AcceptedLogPerSecond+1)
	}
}
