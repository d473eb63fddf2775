package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/metrics"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

const secConfig = `
[server]
max_body_bytes = 4096
[status]
user = "ops"
password = "pw-sec-5150"
[[source]]
name = "shop"
provider = "shopify"
secret = "s3cret-shop"
[[source]]
name = "stripe"
provider = "stripe"
secret = "whsec_stripe_sec_test_1"
`

// secServer is the whole HTTP face on a real listener.
type secServer struct {
	addr  string
	srv   *web.Server
	db    *bboltstore.DB
	recv  *receive.Receiver
	stats *app.Stats
	prom  *metrics.Prometheus
}

func newSecServer(t *testing.T, readTimeout time.Duration) *secServer {
	t.Helper()
	cfg := mustConfig(t, secConfig)
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	login := testAccess(t, cfg, db)
	s := &secServer{db: db, recv: receive.New(cfg, db), stats: app.NewStats(cfg, db, time.Now)}
	s.prom = metrics.New(s.stats, db)
	s.recv.Stats = s.stats
	s.srv = web.New(cfg, web.Deps{Receiver: s.recv, Store: db, Health: db.Ping, Access: login, Stats: s.stats, Metrics: s.prom,
		ReadTimeout: readTimeout, LimitedDelay: time.Millisecond})
	s.addr = serve(t, s.srv.App())
	return s
}

// post sends body to /in/source with h over a real connection.
func (s *secServer) post(t *testing.T, source string, body []byte, h http.Header) (int, map[string]string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+s.addr+"/in/"+source, bytes.NewReader(body))
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, m
}

// A client that drips its request headers a byte at a time is cut off by
// the read timeout, and the server goes on serving others.
func TestServer_Slowloris(t *testing.T) {
	s := newSecServer(t, time.Second)
	conn, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	closed := make(chan time.Time, 1)
	go func() {
		io.Copy(io.Discard, conn) // until the server hangs up
		closed <- time.Now()
	}()
	start := time.Now()
	drip := []byte("POST /in/shop HTTP/1.1\r\nHost: hookbox\r\nX-Shopify-Topic: orders/create\r\nContent-Length: 2\r\n\r\n{}")
	sent := 0
	var cut time.Time
loop:
	for ; sent < len(drip); sent++ {
		if _, err := conn.Write(drip[sent : sent+1]); err != nil {
			break
		}
		select {
		case cut = <-closed:
			break loop
		case <-time.After(500 * time.Millisecond):
		}
	}
	if cut.IsZero() {
		t.Fatalf("the server read all %d bytes dripped over %v without hanging up", sent, time.Since(start))
	}
	if took := cut.Sub(start); took > 4*time.Second {
		t.Fatalf("the server hung up after %v, over its 1s read timeout", took)
	}
	if sent >= len(drip)/2 {
		t.Fatalf("the server took %d of %d bytes before hanging up", sent, len(drip))
	}
	// Everyone else is still served.
	body := []byte(`{"id": 1}`)
	if code, m := s.post(t, "shop", body, signShop(t, body, "after-slowloris")); code != 200 || m["status"] != "accepted" {
		t.Fatalf("after the slow client: %d %v", code, m)
	}
}

// Headers beyond the read buffer get 431 with the usual JSON answer. The
// request goes out in one write on a raw connection: the server answers
// before reading it all, and a client writing in pieces could see its
// write fail before it reads the answer.
func TestServer_OversizedHeaders(t *testing.T) {
	s := newSecServer(t, 0)
	body := []byte(`{"id": 1}`)
	send := func(h http.Header) (int, string) {
		t.Helper()
		var req bytes.Buffer
		fmt.Fprintf(&req, "POST /in/shop HTTP/1.1\r\nHost: hookbox\r\nContent-Length: %d\r\n", len(body))
		h.Write(&req)
		req.WriteString("\r\n")
		req.Write(body)
		conn, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		conn.Write(req.Bytes()) // may fail part-way: the answer is what counts
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("no answer to %d bytes of headers: %v", req.Len(), err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(raw)
	}
	h := signShop(t, body, "big-headers")
	h.Set("X-Big", strings.Repeat("a", web.ReadBufferSize+1024))
	if code, answer := send(h); code != 431 || answer != `{"status":"error","error":"request headers too large"}` {
		t.Fatalf("one big header: %d %s; want 431", code, answer)
	}
	// Many small headers that add up past the buffer: the same.
	h = signShop(t, body, "many-headers")
	for i := range web.ReadBufferSize/32 + 64 {
		h.Set(fmt.Sprintf("X-H-%04d", i), strings.Repeat("b", 24))
	}
	if code, answer := send(h); code != 431 {
		t.Fatalf("many headers: %d %s; want 431", code, answer)
	}
	if _, events, _ := s.db.Counts(context.Background()); events != 0 {
		t.Fatalf("%d events stored", events)
	}
}

// Invalid UTF-8 in the body and in the event id header is stored byte for
// byte, answered with JSON, and shown by the API without a panic.
func TestServer_InvalidUTF8(t *testing.T) {
	s := newSecServer(t, 0)
	body := []byte("{\"id\": 1, \"name\": \"\xff\xfe\xc3\x28 \xed\xa0\x80\"}\x00\xff")
	for _, id := range []string{"evt-\xff\xfe\x80", "evt-\xc3\x28", "\xed\xa0\x80"} {
		h := signShop(t, body, id)
		h.Set("X-Shopify-Topic", "orders/\xff")
		code, m := s.post(t, "shop", body, h)
		if code == 400 {
			continue // refusing is allowed; crashing or mangling is not
		}
		if code != 200 || m["status"] != "accepted" {
			t.Fatalf("id %q: answer %d %v", id, code, m)
		}
		_, seq, ok, err := s.db.LookupID(context.Background(), "shop", id)
		if !ok || err != nil {
			t.Fatalf("id %q not stored byte for byte: %v", id, err)
		}
		e, err := s.db.Event(context.Background(), seq)
		if err != nil || !bytes.Equal(e.Body, body) || e.ID != id || e.Topic != "orders/\xff" {
			t.Fatalf("stored event %+v, %v; want the exact bytes", e, err)
		}
		req, _ := http.NewRequest("GET", "http://"+s.addr+"/api/v1/events/"+strconv.FormatUint(seq, 10), nil)
		req.SetBasicAuth("ops", "pw-sec-5150")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !json.Valid(raw) {
			t.Fatalf("GET /api/v1/events/%d: %d %q", seq, resp.StatusCode, raw)
		}
	}
}

// 10,000 distinct unknown sources: each 404, no counters or metrics per
// name, and no lasting memory.
func TestServer_ManyUnknownSources(t *testing.T) {
	s := newSecServer(t, 0)
	const n = 10000
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	defer client.CloseIdleConnections()
	send := func(from, to int) error {
		for i := from; i < to; i++ {
			resp, err := client.Post(fmt.Sprintf("http://%s/in/unknown-%d", s.addr, i), "application/json", strings.NewReader(`{"id":1}`))
			if err != nil {
				return err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 404 {
				return fmt.Errorf("unknown-%d: %d, want 404", i, resp.StatusCode)
			}
		}
		return nil
	}
	if err := send(0, 200); err != nil { // warm up connections and pools
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	var failed atomic.Value
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := send(200+w*(n/8), 200+(w+1)*(n/8)); err != nil {
				failed.Store(err)
			}
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap after %d unknown sources: %+d KiB", n, growth>>10)
	if growth > 8<<20 {
		t.Fatalf("the heap grew by %d KiB over %d unknown sources", growth>>10, n)
	}
	for _, name := range []string{"unknown-0", "unknown-5000", "unknown-10199"} {
		if s.recv.SourceStats(name) != nil {
			t.Fatalf("counters exist for %s", name)
		}
	}
	families, err := s.prom.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.HasPrefix(l.GetValue(), "unknown-") {
					t.Fatalf("metric %s has a series for %s", f.GetName(), l.GetValue())
				}
			}
		}
	}
	if ids, events, _ := s.db.Counts(context.Background()); ids != 0 || events != 0 {
		t.Fatalf("stored %d ids, %d events for unknown sources", ids, events)
	}
}

// A Stripe signature over a timestamp outside the tolerance is refused even
// though it is genuine: a captured request cannot be replayed later.
func TestServer_StaleStripeSignature(t *testing.T) {
	s := newSecServer(t, 0)
	body := []byte(`{"id": "evt_replay_1", "type": "charge.succeeded"}`)
	sign := func(at time.Time) http.Header {
		h, err := provider.Sign("stripe", provider.Settings{Secrets: [][]byte{[]byte("whsec_stripe_sec_test_1")}}, body, "", "", "", at)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	now := time.Now()
	for _, tt := range []struct {
		name   string
		at     time.Time
		code   int
		status string
	}{
		{"Stale", now.Add(-6 * time.Minute), 401, "error"},
		{"Future", now.Add(6 * time.Minute), 401, "error"},
		{"Fresh", now, 200, "accepted"},
		{"ReplayedFresh", now, 200, "duplicate"},
		{"ReplayedStale", now.Add(-time.Hour), 401, "error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, m := s.post(t, "stripe", body, sign(tt.at))
			if code != tt.code || m["status"] != tt.status {
				t.Fatalf("answer = %d %v; want %d %s", code, m, tt.code, tt.status)
			}
			if code == 401 && m["error"] != "signature does not match" && !strings.Contains(m["error"], "timestamp") {
				t.Fatalf("401 says %q", m["error"])
			}
		})
	}
	if got := s.recv.SourceStats("stripe").Rejected.Load(); got != 3 {
		t.Fatalf("rejected = %d, want 3", got)
	}
}

// Every route behind the login refuses wrong credentials, a forged session
// cookie and a Basic header that does not parse, not just their absence.
func TestServer_EveryRouteRefusesBadLogins(t *testing.T) {
	s := newSecServer(t, 0)
	public := map[string]bool{"POST /in/:source": true, "GET /healthz": true, "HEAD /healthz": true,
		"GET /login": true, "HEAD /login": true, "POST /login": true}
	bad := map[string]func(*http.Request){
		"WrongPassword": func(r *http.Request) { r.SetBasicAuth("ops", "pw-sec-5151") },
		"WrongUser":     func(r *http.Request) { r.SetBasicAuth("admin", "pw-sec-5150") },
		"PrefixOfPassword": func(r *http.Request) {
			r.SetBasicAuth("ops", "pw-sec-515")
		},
		"EmptyPassword": func(r *http.Request) { r.SetBasicAuth("ops", "") },
		"NoColon":       func(r *http.Request) { r.Header.Set("Authorization", "Basic b3Bz") },
		"NotBase64":     func(r *http.Request) { r.Header.Set("Authorization", "Basic !!!") },
		"Bearer":        func(r *http.Request) { r.Header.Set("Authorization", "Bearer pw-sec-5150") },
		"ForgedSession": func(r *http.Request) {
			r.AddCookie(&http.Cookie{Name: "hookbox_session", Value: strings.Repeat("0", 64)})
		},
		"EmptySession":   func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "hookbox_session", Value: ""}) },
		"PasswordCookie": func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "hookbox_session", Value: "pw-sec-5150"}) },
	}
	// The right login gets in (and its credential is cached), so the
	// refusals below mean something.
	rightLogin := func() {
		t.Helper()
		req := httptest.NewRequest("GET", "/api/v1/stats", nil)
		req.SetBasicAuth("ops", "pw-sec-5150")
		if resp, err := s.srv.App().Test(req, -1); err != nil || resp.StatusCode != 200 {
			t.Fatalf("right login: %v %v", resp.StatusCode, err)
		}
	}
	rightLogin()
	checked, wrong, limited := 0, 0, 0
	for _, r := range s.srv.App().GetRoutes(true) {
		key := r.Method + " " + r.Path
		if public[key] || strings.HasPrefix(r.Path, "/static") || r.Method == "CONNECT" || r.Method == "TRACE" || r.Method == "OPTIONS" {
			continue
		}
		path := strings.NewReplacer(":seq", "1", ":id", "1", ":source", "x").Replace(r.Path)
		for name, set := range bad {
			req := httptest.NewRequest(r.Method, path, nil)
			set(req)
			resp, err := s.srv.App().Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			switch {
			case resp.StatusCode == 401:
				wrong++
			case resp.StatusCode == 429 && resp.Header.Get("Retry-After") != "":
				limited++ // past the failed logins one address may make
			case resp.StatusCode == 303 && strings.HasPrefix(resp.Header.Get("Location"), "/login"):
			default:
				t.Errorf("%s with %s: %d", key, name, resp.StatusCode)
			}
		}
		checked++
	}
	if checked < 15 {
		t.Fatalf("checked only %d routes", checked)
	}
	if limited == 0 || wrong < web.ClientBurst {
		t.Errorf("%d answered 401, %d answered 429: the limit of failed logins did not hold", wrong, limited)
	}
	rightLogin() // from the cache, past the limit
}
