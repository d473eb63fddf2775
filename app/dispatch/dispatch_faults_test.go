package dispatch_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/alert"
)

// faultDest is one destination of faultConfig.
type faultDest struct {
	name, url, timeout, retry string
	concurrency               int
}

// faultConfig routes every event of source gh to every destination.
func faultConfig(dests ...faultDest) string {
	var b strings.Builder
	b.WriteString("[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"gh-secret\"\n")
	var names []string
	for _, d := range dests {
		names = append(names, fmt.Sprintf("%q", d.name))
		fmt.Fprintf(&b, "[[destination]]\nname = %q\nurl = %q\ntimeout = %q\nretry = %s\n", d.name, d.url, d.timeout, d.retry)
		if d.concurrency > 0 {
			fmt.Fprintf(&b, "concurrency = %d\n", d.concurrency)
		}
	}
	fmt.Fprintf(&b, "[[route]]\nsource = \"gh\"\nto = [%s]\n", strings.Join(names, ", "))
	return b.String()
}

// attempts returns the attempts of delivery n of event id.
func (h *harness) attempts(t *testing.T, id string, n int) []*app.Attempt {
	t.Helper()
	_, as, err := h.db.Delivery(context.Background(), h.deliveries(t, id)[n].ID)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

// counter is a test server that counts the requests it got.
func counter(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	t.Cleanup(s.Close)
	return s, &n
}

// A destination that never answers: each attempt ends at its timeout and is
// recorded as such, no more than its concurrency hang at once, and the
// other destination's deliveries flow meanwhile.
func TestDispatcher_HangingDestination(t *testing.T) {
	var inflight, most atomic.Int64
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Add(-1)
		io.Copy(io.Discard, r.Body) // the server notices a hang-up only after the body
		// Count the requests hanging together a moment after this one came:
		// the server notices that hookbox hung up on an earlier one (at its
		// timeout, just before this one was sent) a little after the fact.
		// A request that really hangs alongside lasts the whole 1s timeout.
		select {
		case <-r.Context().Done():
			return
		case <-time.After(250 * time.Millisecond):
		}
		n := inflight.Load()
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-r.Context().Done(): // hookbox gave up
		case <-release:
		}
	}))
	t.Cleanup(hang.Close)
	t.Cleanup(func() { close(release) })
	ok := newSink(t, 200)
	h := newHarness(t, faultConfig(
		faultDest{name: "hang", url: hang.URL, timeout: "1s", retry: `["1h"]`, concurrency: 2},
		faultDest{name: "ok", url: ok.URL, timeout: "2s", retry: `["1h"]`}))

	const events = 20
	start := time.Now()
	for i := range events {
		h.send(t, fmt.Sprint("hang-", i), fmt.Sprintf(`{"i": %d}`, i))
	}
	for i := range events {
		h.waitState(t, fmt.Sprint("hang-", i), 1, app.Delivered)
	}
	flowed := time.Since(start)
	// The hanging destination needs 10 timeouts of 1s in a row for its
	// first attempts; the healthy one must not have waited for them.
	if flowed > 8*time.Second {
		t.Fatalf("the healthy destination took %v for %d events", flowed, events)
	}
	h.waitState(t, "hang-0", 0, app.Pending)
	h.waitAttempts(t, "hang-0", 0, 1)
	as := h.attempts(t, "hang-0", 0)
	if a := as[0]; a.Status != 0 || a.Error != "no answer within 1s" || a.Duration < time.Second || a.Duration > 5*time.Second {
		t.Fatalf("attempt to the hanging destination = %+v, want a timeout after 1s", a)
	}
	if m := most.Load(); m > 2 {
		t.Fatalf("%d requests hung at once, over the destination's concurrency of 2", m)
	}
	// hookbox's own record of its attempts: never more than 2 at once.
	type edge struct {
		at   time.Time
		step int
	}
	var edges []edge
	for i := range events {
		d := h.deliveries(t, fmt.Sprint("hang-", i))[0]
		if d.Attempts == 0 {
			continue
		}
		for _, a := range h.attempts(t, fmt.Sprint("hang-", i), 0) {
			edges = append(edges, edge{a.Start, 1}, edge{a.Start.Add(a.Duration), -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.step - b.step // an attempt that ends as another starts does not overlap it
	})
	n := 0
	for _, e := range edges {
		if n += e.step; n > 2 {
			t.Fatalf("%d recorded attempts to the hanging destination overlap, over its concurrency of 2", n)
		}
	}
}

// A destination that answers slowly but within its timeout is delivered.
func TestDispatcher_SlowDestination(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(400 * time.Millisecond) // a slow answer, in real time, is what this test is about
		io.WriteString(w, "took my time")
	}))
	t.Cleanup(slow.Close)
	h := newHarness(t, faultConfig(faultDest{name: "slow", url: slow.URL, timeout: "3s", retry: `[]`}))
	h.send(t, "slow-1", `{}`)
	h.waitState(t, "slow-1", 0, app.Delivered)
	as := h.attempts(t, "slow-1", 0)
	if len(as) != 1 || as[0].Status != 200 || as[0].Duration < 400*time.Millisecond || string(as[0].Response) != "took my time" {
		t.Fatalf("attempts = %+v, want one 200 after 400ms", as)
	}
}

// A 3xx is a failed attempt that says where it pointed: hookbox sends only
// to the URL in its config, never to a Location a destination names.
func TestDispatcher_RedirectNotFollowed(t *testing.T) {
	target, hits := counter(t)
	for _, code := range []int{301, 302, 303, 307, 308} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, target.URL+"/elsewhere", code)
			}))
			t.Cleanup(redirect.Close)
			h := newHarness(t, faultConfig(faultDest{name: "r", url: redirect.URL, timeout: "2s", retry: `[]`}))
			h.send(t, "redirect-1", `{}`)
			d := h.waitState(t, "redirect-1", 0, app.Dead)
			if d.LastStatus != code || d.LastError != "redirects are not followed (Location: "+target.URL+"/elsewhere)" {
				t.Fatalf("delivery = %+v, want a failed attempt with %d", d, code)
			}
			if n := hits.Load(); n != 0 {
				t.Fatalf("the redirect target got %d requests", n)
			}
		})
	}
}

// An endless response body: the attempt ends, keeps 1 KiB of it, and
// hookbox stops reading long before gigabytes.
func TestDispatcher_HugeResponseBody(t *testing.T) {
	for _, tt := range []struct {
		code  int
		state app.DeliveryState
	}{{200, app.Delivered}, {500, app.Dead}} {
		t.Run(fmt.Sprint(tt.code), func(t *testing.T) {
			var written atomic.Int64
			done := make(chan struct{})
			endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(done)
				w.WriteHeader(tt.code)
				chunk := []byte(strings.Repeat("x", 32<<10))
				for written.Load() < 4<<30 { // 4 GiB: the test fails long before
					n, err := w.Write(chunk)
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			}))
			t.Cleanup(endless.Close)
			h := newHarness(t, faultConfig(faultDest{name: "big", url: endless.URL, timeout: "60s", retry: `[]`}))
			start := time.Now()
			h.send(t, "big-1", `{}`)
			h.waitState(t, "big-1", 0, tt.state)
			as := h.attempts(t, "big-1", 0)
			if len(as) != 1 || as[0].Status != tt.code || len(as[0].Response) != app.MaxResponseSnippet ||
				strings.Trim(string(as[0].Response), "x") != "" {
				t.Fatalf("attempt = status %d, %d bytes kept, want %d and %d bytes", as[0].Status, len(as[0].Response), tt.code, app.MaxResponseSnippet)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Fatalf("the attempt took %v", took)
			}
			select {
			case <-done: // hookbox hung up
			case <-time.After(10 * time.Second):
				t.Fatalf("hookbox still reading after %d bytes", written.Load())
			}
			if n := written.Load(); n > 64<<20 {
				t.Fatalf("the server could write %d bytes before hookbox hung up", n)
			}
		})
	}
}

// An https destination whose certificate is not trusted, or that does not
// speak TLS: a failed attempt with a clear error, nothing sent.
func TestDispatcher_TLSErrors(t *testing.T) {
	var hits atomic.Int64
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	selfSigned := httptest.NewUnstartedServer(handler)
	selfSigned.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake errors it logs are expected
	selfSigned.StartTLS()
	t.Cleanup(selfSigned.Close)
	plain := httptest.NewServer(handler)
	t.Cleanup(plain.Close)

	for _, tt := range []struct{ name, url, want string }{
		{"UntrustedCertificate", selfSigned.URL, "certificate"},
		{"NotTLS", "https://" + strings.TrimPrefix(plain.URL, "http://"), "HTTP response to HTTPS client"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, faultConfig(faultDest{name: "tls", url: tt.url, timeout: "5s", retry: `[]`}))
			h.send(t, "tls-1", `{}`)
			d := h.waitState(t, "tls-1", 0, app.Dead)
			if d.LastStatus != 0 || !strings.Contains(d.LastError, tt.want) {
				t.Fatalf("delivery = %+v, want an error mentioning %q", d, tt.want)
			}
			if strings.Contains(d.LastError, tt.url) {
				t.Fatalf("the error %q names the URL", d.LastError)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached a handler despite the TLS error", n)
	}
}

// The alert URL is also the only address the alerter posts to: a redirect
// is a failure, not followed.
func TestAlerter_RedirectNotFollowed(t *testing.T) {
	target, hits := counter(t)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirect.Close)
	s := newSink(t, 410)
	h := newHarness(t, destsConfig(`[]`, s.URL)+fmt.Sprintf("[alerts]\ndead_letters_over = 0\nurl = %q\n", redirect.URL))
	h.send(t, "alert-1", `{}`)
	h.waitState(t, "alert-1", 0, app.Dead)
	alert.New(h.cfg, h.db).Check(context.Background())
	if n := hits.Load(); n != 0 {
		t.Fatalf("the alert followed a redirect: the target got %d requests", n)
	}
}

// HTTP_PROXY and HTTPS_PROXY in hookbox's environment are not used: the
// dispatcher and the alerter connect to the configured addresses only. Go
// reads the proxy variables once per process, so the check runs in a
// child process started with them set.
func TestDispatcher_NoProxyFromEnvironment(t *testing.T) {
	if os.Getenv("HOOKBOX_PROXY_CHILD") != "" {
		proxyChild(t)
		return
	}
	if localAddr(t) == "" {
		t.Skip("no non-loopback address to listen on (Go never proxies loopback)")
	}
	var mu sync.Mutex
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.String())
		mu.Unlock()
	}))
	t.Cleanup(proxy.Close)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDispatcher_NoProxyFromEnvironment$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "HOOKBOX_PROXY_CHILD=1", "HTTP_PROXY="+proxy.URL, "HTTPS_PROXY="+proxy.URL,
		"http_proxy="+proxy.URL, "https_proxy="+proxy.URL, "NO_PROXY=", "no_proxy=")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Fatalf("hookbox sent through the proxy from the environment: %v", seen)
	}
}

// localAddr returns a non-loopback IPv4 address of this host, or "".
func localAddr(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// proxyChild sends a delivery and an alert to a server on a non-loopback
// address of this host: directly, the server gets them; through the
// proxy, the parent's proxy would.
func proxyChild(t *testing.T) {
	ln, err := net.Listen("tcp", localAddr(t)+":0")
	if err != nil {
		t.Fatal(err)
	}
	var hooks, alerts atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/alert" {
			alerts.Add(1)
		} else {
			hooks.Add(1)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	base := "http://" + ln.Addr().String()
	h := newHarness(t, faultConfig(faultDest{name: "direct", url: base + "/hook", timeout: "5s", retry: `[]`})+
		fmt.Sprintf("[alerts]\ndead_letters_over = 0\nurl = %q\n", base+"/alert"))
	h.send(t, "proxy-1", `{}`)
	h.waitState(t, "proxy-1", 0, app.Delivered)
	if hooks.Load() != 1 {
		t.Fatalf("the destination got %d requests, want 1", hooks.Load())
	}
	// One dead delivery for the alert to report.
	if err := h.db.RecordAttempt(context.Background(), h.deliveries(t, "proxy-1")[0].ID, &app.Attempt{Start: time.Now(), Status: 500}, app.Dead, time.Time{}); err != nil {
		t.Fatal(err)
	}
	alert.New(h.cfg, h.db).Check(context.Background())
	if alerts.Load() != 1 {
		t.Fatalf("the alert URL got %d requests, want 1", alerts.Load())
	}
}
