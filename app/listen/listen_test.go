package listen_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/listen"
)

// output is a Listener's Out that tests wait on: each line is kept and
// announced.
type output struct {
	mu    sync.Mutex
	text  strings.Builder
	wrote chan struct{}
}

func newOutput() *output { return &output{wrote: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.text.Write(p)
	o.mu.Unlock()
	select {
	case o.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (o *output) String() string { o.mu.Lock(); defer o.mu.Unlock(); return o.text.String() }

// wait waits until the output holds n lines that contain want.
func (o *output) wait(t *testing.T, want string, n int) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for strings.Count(o.String(), want) < n {
		select {
		case <-o.wrote:
		case <-deadline:
			t.Fatalf("no %d lines with %q in:\n%s", n, want, o.String())
		}
	}
}

// sseEvent writes e as the stream's documented format does (app/stream.go:
// id, event: event, data: the StreamEvent JSON). The test servers below
// write that format; they are not the product's endpoint, which has its
// own tests and which the end-to-end tests in app/cli run against.
func sseEvent(w io.Writer, e app.StreamEvent) {
	b, _ := json.Marshal(e)
	fmt.Fprintf(w, "id: %d\nevent: event\ndata: %s\n\n", e.Seq, b)
	w.(http.Flusher).Flush()
}

func sseNotice(w io.Writer, kind, msg string) {
	b, _ := json.Marshal(app.StreamNotice{Kind: kind, Message: msg})
	fmt.Fprintf(w, "event: notice\ndata: %s\n\n", b)
	w.(http.Flusher).Flush()
}

func streamHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// received is what the local app got.
type received struct {
	header http.Header
	body   []byte
	path   string
}

// localApp records each request and answers status.
func localApp(t *testing.T, status int) (*httptest.Server, chan received) {
	got := make(chan received, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- received{header: r.Header.Clone(), body: b, path: r.URL.Path}
		if status == http.StatusFound {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	return srv, got
}

func run(t *testing.T, l *listen.Listener) (cancel func(), done chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	done = make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return cancel, done
}

// Each event is POSTed with its body byte for byte and its headers but the
// hop-by-hop ones, signed by listen; a connection that ends is made again with the last
// event's id as Last-Event-ID, and what follows it is forwarded once.
func TestListener_ForwardAndResume(t *testing.T) {
	body1 := []byte("{\"id\":1,\"note\":\"\xff\xfe not UTF-8 \r\n\"}")
	events := []app.StreamEvent{
		{Seq: 11, Source: "shop", ID: "820982911946154508", Topic: "orders/create", Provider: "shopify", Body: body1, Header: [][2]string{
			{"Content-Type", "application/json"}, {"X-Shopify-Hmac-Sha256", "abc="}, {"x-shopify-topic", "orders/create"},
			{"Connection", "X-Private"}, {"X-Private", "p"}, {"Host", "vps.example"}, {"Content-Length", "999"},
			{"Transfer-Encoding", "chunked"}, {"Keep-Alive", "timeout=5"}, {"Stripe-Signature", "t=1,v1=ff"},
			{"X-Twice", "a"}, {"X-Twice", "b"}, {"Bad\nName", "x"}, {"X-Bad-Value", "a\r\nInjected: 1"},
		}},
		{Seq: 12, Source: "shop", ID: "e2", Topic: "orders/paid", Body: []byte("two")},
		{Seq: 13, Source: "shop", ID: "e3", Body: []byte("three")},
	}
	var mu sync.Mutex
	var lastIDs []string
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		lastIDs = append(lastIDs, r.Header.Get("Last-Event-ID"))
		n := len(lastIDs)
		mu.Unlock()
		if r.URL.Path != "/base/api/v1/stream" || r.URL.Query().Get("source") != "shop" || r.URL.Query().Get("topic") != "orders/*" ||
			r.Header.Get("Authorization") != "Bearer hbx_test" || r.Header.Get("Accept") != "text/event-stream" {
			http.Error(w, "unexpected request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		streamHeader(w)
		switch n {
		case 1: // two events, then the connection ends
			sseNotice(w, app.StreamNoticeReady, "live")
			fmt.Fprint(w, ": ping\n\n")
			sseEvent(w, events[0])
			sseEvent(w, events[1])
		default: // resumes after Last-Event-ID
			for _, e := range events {
				if fmt.Sprint(e.Seq) > r.Header.Get("Last-Event-ID") {
					sseEvent(w, e)
				}
			}
			sseNotice(w, app.StreamNoticeReady, "live")
			<-r.Context().Done()
		}
	}))
	t.Cleanup(stream.Close)
	local, got := localApp(t, http.StatusOK)
	out := newOutput()
	l := &listen.Listener{Remote: stream.URL + "/base/", Forward: local.URL + "/webhooks", Source: "shop", Topic: "orders/*",
		Token: "hbx_test", Out: out, MinBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	run(t, l)
	out.wait(t, "→ 200 OK", 3)
	out.wait(t, "Ready, forwarding events of "+stream.URL+"/base/ to "+local.URL+"/webhooks (source shop, topic orders/*)", 2)
	if !strings.Contains(out.String(), "connection lost: the server closed the stream; reconnecting in 1ms") {
		t.Fatalf("no reconnection line:\n%s", out)
	}
	mu.Lock()
	if got, want := fmt.Sprint(lastIDs), "[ 12]"; got != want {
		t.Fatalf("Last-Event-IDs sent %s, want %s", got, want)
	}
	mu.Unlock()
	if got, want := l.LastID(), "13"; got != want {
		t.Fatalf("last id %q, want %q", got, want)
	}
	first := <-got
	if !bytes.Equal(first.body, body1) || first.path != "/webhooks" {
		t.Fatalf("forwarded body %q to %s, want %q", first.body, first.path, body1)
	}
	// Signatures a remote sent (one older than the contract that the
	// stream carries none) are never forwarded: the HMAC is listen's own,
	// with the secret derived from the token.
	mac := hmac.New(sha256.New, []byte(listen.TokenSecret("hbx_test")))
	mac.Write(body1)
	for name, want := range map[string]string{
		"Content-Type": "application/json", "X-Shopify-Hmac-Sha256": base64.StdEncoding.EncodeToString(mac.Sum(nil)), "X-Shopify-Topic": "orders/create",
		"Stripe-Signature": "", "X-Private": "", "Keep-Alive": "", "X-Bad-Value": "", "Injected": "",
		"User-Agent": "", "Idempotency-Key": "", "Content-Length": fmt.Sprint(len(body1)),
	} {
		if got := first.header.Get(name); got != want {
			t.Errorf("header %s: %q, want %q", name, got, want)
		}
	}
	if got := first.header.Values("X-Twice"); fmt.Sprint(got) != "[a b]" {
		t.Errorf("X-Twice: %q", got)
	}
	for i, want := range []string{"two", "three"} {
		if r := <-got; string(r.body) != want {
			t.Fatalf("forward %d: %q, want %q", i+2, r.body, want)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("a fourth forward: %q", r.body)
	default:
	}
	for _, want := range []string{"  shop  orders/create  820982911946154508  → 200 OK  ", "  shop  -  e3  → 200 OK  "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no line with %q:\n%s", want, out)
		}
	}
}

// A forward that fails is printed and not tried again; a redirect is not
// followed; the next event goes on.
func TestListener_ForwardFailures(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		want   string
	}{
		{"ServerError", http.StatusInternalServerError, "→ 500 Internal Server Error"},
		{"Redirect", http.StatusFound, "→ 302 Found"},
		{"Refused", 0, "→ error: dial tcp"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				streamHeader(w)
				sseEvent(w, app.StreamEvent{Seq: 1, Source: "s", ID: "a", Topic: "t", Body: []byte("1")})
				sseEvent(w, app.StreamEvent{Seq: 2, Source: "s", ID: "b", Topic: "t", Body: []byte("2")})
				<-r.Context().Done()
			}))
			t.Cleanup(stream.Close)
			forward := "http://127.0.0.1:1/none"
			var got chan received
			if tt.status != 0 {
				var local *httptest.Server
				local, got = localApp(t, tt.status)
				forward = local.URL + "/hook"
			}
			out := newOutput()
			run(t, &listen.Listener{Remote: stream.URL, Forward: forward, Token: "hbx_t", Out: out})
			out.wait(t, tt.want, 2)
			if got != nil {
				for _, want := range []string{"1", "2"} {
					if r := <-got; string(r.body) != want || r.path != "/hook" {
						t.Fatalf("got %q at %s, want %q at /hook", r.body, r.path, want)
					}
				}
				select {
				case r := <-got:
					t.Fatalf("a third request (a retry or a redirect followed): %q at %s", r.body, r.path)
				default:
				}
			}
		})
	}
}

// 401, 403 (with the server's sentence), 404 and a redirect end Run with a
// clear error; 503 and 429 are tried again.
func TestListener_Refused(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		answer string
		want   string
	}{
		{"Unauthorized", 401, `{"status":"error","error":"unauthorized"}`, "answered 401 to the token in HOOKBOX_TOKEN: a wrong, revoked or expired token"},
		{"Forbidden", 403, `{"status":"error","error":"role viewer may not do this"}`, "answered 403 to the token in HOOKBOX_TOKEN: role viewer may not do this"},
		{"NotFound", 404, `{"status":"error","error":"not found"}`, "has no /api/v1/stream (404)"},
		{"Redirect", 301, ``, `redirects to "https://elsewhere/api/v1/stream" (301)`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.status == 301 {
					w.Header().Set("Location", "https://elsewhere/api/v1/stream")
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.answer)
			}))
			t.Cleanup(stream.Close)
			out := newOutput()
			l := &listen.Listener{Remote: stream.URL, Forward: "http://127.0.0.1:1/", Token: "hbx_secret_value",
				CredentialFrom: "the token in HOOKBOX_TOKEN", Out: out}
			err := l.Run(context.Background())
			var fatal *listen.FatalError
			if !errors.As(err, &fatal) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "hbx_secret_value") {
				t.Fatalf("Run: %v, want a FatalError with %q", err, tt.want)
			}
		})
	}
	t.Run("Busy", func(t *testing.T) {
		var mu sync.Mutex
		n := 0
		stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			first := n == 1
			mu.Unlock()
			if first {
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"status":"error","error":"too many listeners for this user (4)"}`)
				return
			}
			streamHeader(w)
			sseNotice(w, app.StreamNoticeReady, "live")
			<-r.Context().Done()
		}))
		t.Cleanup(stream.Close)
		out := newOutput()
		run(t, &listen.Listener{Remote: stream.URL, Forward: "http://127.0.0.1:1/", Token: "t", Out: out, MinBackoff: time.Millisecond})
		out.wait(t, "Ready, forwarding", 1)
		if !strings.Contains(out.String(), "the server answered 429: too many listeners for this user (4); reconnecting in 1ms") {
			t.Fatalf("output:\n%s", out)
		}
	})
}

// A line longer than the bound ends the connection (the remote is a
// peer), says which flag raises it, and the listener connects again; the
// drop notice is printed; Cancel ends Run with nil.
func TestListener_BoundsNoticesCancel(t *testing.T) {
	var mu sync.Mutex
	n := 0
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		streamHeader(w)
		switch k {
		case 1:
			sseEvent(w, app.StreamEvent{Seq: 1, Body: bytes.Repeat([]byte("x"), 400<<10)})
		case 2:
			sseNotice(w, app.StreamNoticeGap, "events 2 to 9 were not sent: older than 10m0s")
			sseNotice(w, app.StreamNoticeDropped, "too far behind: 256 events wait; reconnect to resume")
		default:
			sseNotice(w, app.StreamNoticeReady, "live")
			<-r.Context().Done()
		}
	}))
	t.Cleanup(stream.Close)
	out := newOutput()
	cancel, done := run(t, &listen.Listener{Remote: stream.URL, Forward: "http://127.0.0.1:1/", Token: "t", Out: out,
		MaxBody: 100, MinBackoff: time.Millisecond})
	out.wait(t, "Ready, forwarding", 1)
	for _, want := range []string{
		"connection lost: server-sent event too long: a line is over", "(raise -max-body to the remote's server.max_body_bytes)",
		"gap: events 2 to 9 were not sent", "dropped: too far behind: 256 events wait",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel: %v", err)
	}
	done <- nil // for the cleanup
}

// Without a token, the user and password go as Basic authentication.
func TestListener_BasicAuth(t *testing.T) {
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ops" || p != "pw-1" || r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		streamHeader(w)
		sseNotice(w, app.StreamNoticeReady, "live")
		<-r.Context().Done()
	}))
	t.Cleanup(stream.Close)
	out := newOutput()
	run(t, &listen.Listener{Remote: stream.URL, Forward: "http://127.0.0.1:1/", User: "ops", Password: "pw-1", Out: out})
	out.wait(t, "Ready, forwarding events of "+stream.URL+" to http://127.0.0.1:1/", 1)
}
