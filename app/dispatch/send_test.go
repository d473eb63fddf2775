package dispatch_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
)

// rawServer is a destination written at the byte level, for answers whose
// framing a test needs exactly. answer gets each request with its number
// on its connection (1, 2, …), its header read, and writes to the
// connection itself; it returns false to close the connection. The body is
// read before answer unless headersOnly.
type rawServer struct {
	ln       net.Listener
	URL      string
	conns    atomic.Int64 // connections accepted
	requests atomic.Int64 // requests whose header was read
	mu       sync.Mutex
	open     []net.Conn
}

func newRawServer(t *testing.T, answer func(c net.Conn, n int, r *http.Request) bool) *rawServer {
	return newRawServerAt(t, false, answer)
}

func newRawServerAt(t *testing.T, headersOnly bool, answer func(c net.Conn, n int, r *http.Request) bool) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{ln: ln, URL: "http://" + ln.Addr().String() + "/hook"}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			s.mu.Lock()
			s.open = append(s.open, c)
			s.mu.Unlock()
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 1; ; n++ {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					s.requests.Add(1)
					if !headersOnly {
						if _, err := io.Copy(io.Discard, r.Body); err != nil {
							return
						}
					}
					if !answer(c, n, r) {
						return
					}
					if _, err := io.Copy(io.Discard, r.Body); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.open {
			c.Close()
		}
	})
	return s
}

// An attempt ends when the answer ends, whatever its framing, even when
// the destination keeps the connection open after it: a length, the
// terminating chunk, or the close of an HTTP/1.0 or close-delimited
// answer. The attempt is recorded with its status and the answer's start,
// and takes milliseconds, not the destination's timeout.
func TestSend_AnswerEndsWithItsFraming(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer string
		keep   bool // the server keeps the connection open after the answer
	}{
		{"ContentLength", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", true},
		{"Chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", true},
		{"ChunkedWithTrailer", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\no\r\n1\r\nk\r\n0\r\nX-Done: 1\r\n\r\n", true},
		{"HTTP10CloseDelimited", "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nok", false},
		{"HTTP11CloseDelimited", "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nok", false},
		{"HTTP10ContentLength", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newRawServer(t, func(c net.Conn, _ int, _ *http.Request) bool {
				io.WriteString(c, tt.answer)
				return tt.keep
			})
			h := newHarness(t, faultConfig(faultDest{name: "d", url: s.URL, timeout: "10s", retry: `["1h"]`, concurrency: 1}))
			for _, id := range []string{"frame-1", "frame-2"} {
				h.send(t, id, `{}`)
				h.waitState(t, id, 0, app.Delivered)
				as := h.attempts(t, id, 0)
				if len(as) != 1 || as[0].Status != 200 || string(as[0].Response) != "ok" || as[0].Error != "" {
					t.Fatalf("%s: attempts %+v; want one 200 with \"ok\" and no error", id, as)
				}
				if as[0].Duration > 2*time.Second {
					t.Fatalf("%s: the attempt took %v: it did not end with the answer", id, as[0].Duration)
				}
			}
			if want := map[bool]int64{true: 1, false: 2}[tt.keep]; s.conns.Load() != want {
				t.Errorf("%d connections for two deliveries, want %d", s.conns.Load(), want)
			}
		})
	}
}

// Go's own server answering chunked after a Flush, as most frameworks do:
// the attempt ends at the last chunk, recorded 200 with the answer.
func TestSend_ChunkedAfterFlush(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(200)
		io.WriteString(w, "accepted")
		w.(http.Flusher).Flush()
		io.WriteString(w, " and done")
	}))
	t.Cleanup(srv.Close)
	h := newHarness(t, faultConfig(faultDest{name: "d", url: srv.URL, timeout: "10s", retry: `["1h"]`, concurrency: 1}))
	start := time.Now()
	for i := range 5 {
		h.send(t, fmt.Sprint("chunk-", i), `{}`)
	}
	for i := range 5 {
		id := fmt.Sprint("chunk-", i)
		h.waitState(t, id, 0, app.Delivered)
		as := h.attempts(t, id, 0)
		if len(as) != 1 || as[0].Status != 200 || string(as[0].Response) != "accepted and done" || as[0].Error != "" {
			t.Fatalf("%s: attempts %+v; want one 200 with the whole answer", id, as)
		}
		if as[0].Duration > time.Second {
			t.Fatalf("%s: the attempt took %v", id, as[0].Duration)
		}
	}
	t.Logf("5 deliveries one at a time to a chunked destination in %v", time.Since(start).Round(time.Millisecond))
	// With concurrency 1, a delivery that was waiting when the previous
	// answer ended goes out within 50 ms of that end.
	var prevEnd time.Time
	for i := range 5 {
		id := fmt.Sprint("chunk-", i)
		d, a := h.deliveries(t, id)[0], h.attempts(t, id, 0)[0]
		if !prevEnd.IsZero() && d.Created.Before(prevEnd) {
			// The 50 ms is held on real servers (app/cli's
			// TestInterop_Destinations, by the median); here, under -race
			// on a loaded machine, only what tells the old behaviour (the
			// send waited for the 10 s timeout) from the new fails.
			gap := a.Start.Sub(prevEnd)
			t.Logf("%s went out %v after the previous answer ended", id, gap)
			if gap > 2*time.Second {
				t.Errorf("%s went out %v after the previous answer ended", id, gap)
			}
		}
		prevEnd = a.Start.Add(a.Duration)
	}
}

// A destination whose keep-alive is shorter than hookbox's (Node's is 5 s)
// closes the idle connection; the next delivery, large or small, after an
// idle longer than that goes out on a fresh connection: delivered on its
// first attempt, no failed attempt recorded.
func TestSend_DestinationClosedIdleConnection(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.IdleTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	h := newHarness(t, faultConfig(faultDest{name: "d", url: srv.URL, timeout: "10s", retry: `["1h"]`, concurrency: 1}))
	h.send(t, "idle-0", `{}`)
	h.waitState(t, "idle-0", 0, app.Delivered)
	for _, size := range []int{64 << 10, 1 << 20} {
		time.Sleep(500 * time.Millisecond) // past the destination's idle timeout: the time is what this test is about
		id := fmt.Sprint("idle-", size)
		h.send(t, id, `{"pad":"`+strings.Repeat("x", size-10)+`"}`)
		d := h.waitState(t, id, 0, app.Delivered)
		if as := h.attempts(t, id, 0); d.Attempts != 1 || len(as) != 1 || as[0].Status != 200 || as[0].Error != "" {
			t.Fatalf("%d bytes after an idle: %d attempts %+v; want one, delivered", size, d.Attempts, as)
		}
	}
}

// A destination that drops a reused connection as a request arrives on
// it, before any byte of an answer (the race of a keep-alive timeout with
// the next send, or a server restarted meanwhile): the send is made once
// more on a fresh connection, and only the delivered attempt is recorded.
// The destination hangs up once it read the request whole, or as soon as
// it read its header: then a large body's write is cut short.
func TestSend_ReusedConnectionDroppedBeforeAnswer(t *testing.T) {
	for _, tt := range []struct {
		size        int
		headersOnly bool
	}{{100, false}, {64 << 10, false}, {1 << 20, false}, {100, true}, {64 << 10, true}, {1 << 20, true}} {
		size := tt.size
		t.Run(fmt.Sprint(size, map[bool]string{true: "/AtHeader", false: "/AtBody"}[tt.headersOnly]), func(t *testing.T) {
			s := newRawServerAt(t, tt.headersOnly, func(c net.Conn, n int, _ *http.Request) bool {
				if n > 1 { // a hang-up with a reset, no answer
					c.(*net.TCPConn).SetLinger(0)
					return false
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				return true
			})
			h := newHarness(t, faultConfig(faultDest{name: "d", url: s.URL, timeout: "10s", retry: `["1h"]`, concurrency: 1}))
			h.send(t, "drop-0", `{}`)
			h.waitState(t, "drop-0", 0, app.Delivered)
			h.send(t, "drop-1", `{"pad":"`+strings.Repeat("x", size)+`"}`)
			d := h.waitState(t, "drop-1", 0, app.Delivered)
			if as := h.attempts(t, "drop-1", 0); d.Attempts != 1 || len(as) != 1 || as[0].Status != 200 {
				t.Fatalf("%d attempts %+v; want one, delivered", d.Attempts, as)
			}
			if n := s.conns.Load(); n != 2 {
				t.Fatalf("%d connections; want the second delivery sent again on a fresh one", n)
			}
		})
	}
}

// A destination that reads each request and hangs up without an answer,
// on a fresh connection too: a normal failed attempt, sent once, not again
// and again.
func TestSend_HangUpWithoutAnswer(t *testing.T) {
	s := newRawServer(t, func(net.Conn, int, *http.Request) bool { return false })
	h := newHarness(t, faultConfig(faultDest{name: "d", url: s.URL, timeout: "10s", retry: `[]`, concurrency: 1}))
	h.send(t, "hangup-1", `{}`)
	d := h.waitState(t, "hangup-1", 0, app.Dead)
	as := h.attempts(t, "hangup-1", 0)
	if len(as) != 1 || as[0].Status != 0 || as[0].Error == "" {
		t.Fatalf("attempts %+v; want one failed attempt with an error", as)
	}
	t.Logf("recorded error: %q", d.LastError)
	if n := s.requests.Load(); n != 1 {
		t.Fatalf("the destination got the request %d times; want once", n)
	}
}

// A 3xx is a failed attempt that says where the destination pointed, and
// that host is never contacted.
func TestSend_RedirectIsAFailedAttempt(t *testing.T) {
	target, hits := counter(t)
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusPermanentRedirect)
	}))
	t.Cleanup(redirect.Close)
	h := newHarness(t, faultConfig(faultDest{name: "r", url: redirect.URL, timeout: "2s", retry: `[]`}))
	h.send(t, "redirect-1", `{}`)
	d := h.waitState(t, "redirect-1", 0, app.Dead)
	want := "redirects are not followed (Location: " + target.URL + "/elsewhere)"
	if d.LastStatus != 308 || d.LastError != want {
		t.Fatalf("delivery = %+v; want 308 and %q", d, want)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the Location host got %d requests", n)
	}
}

// A destination that answers with endless headers: the attempt fails once
// hookbox read a bounded header, long before the timeout, and hookbox hangs
// up.
func TestSend_EndlessAnswerHeader(t *testing.T) {
	var written atomic.Int64
	s := newRawServer(t, func(c net.Conn, _ int, _ *http.Request) bool {
		io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := []byte("X-Filler: " + strings.Repeat("y", 1000) + "\r\n")
		for written.Load() < 1<<30 {
			n, err := c.Write(line)
			written.Add(int64(n))
			if err != nil {
				break
			}
		}
		return false
	})
	h := newHarness(t, faultConfig(faultDest{name: "d", url: s.URL, timeout: "20s", retry: `[]`, concurrency: 1}))
	h.send(t, "headers-1", `{}`)
	d := h.waitState(t, "headers-1", 0, app.Dead)
	as := h.attempts(t, "headers-1", 0)
	if len(as) != 1 || as[0].Status != 0 || !strings.Contains(as[0].Error, "header") || as[0].Duration > 5*time.Second {
		t.Fatalf("attempts %+v; want one failed on the header, quickly", as)
	}
	t.Logf("recorded error: %q after %v; the destination wrote %d bytes", d.LastError, as[0].Duration, written.Load())
	if n := written.Load(); n > 16<<20 {
		t.Fatalf("the destination wrote %d bytes before hookbox hung up", n)
	}
}
