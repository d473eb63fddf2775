package httpsend

import (
	"bufio"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
)

// rawDest answers every request it reads with answer, on connections it
// counts, which it keeps open until the client closes them.
func rawDest(t *testing.T, answer string) (url string, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = new(atomic.Int64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					if _, err := io.Copy(io.Discard, r.Body); err != nil {
						return
					}
					if _, err := io.WriteString(c, answer); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return "http://" + ln.Addr().String() + "/hook", conns
}

// sendTimes sends n events to url with s and returns their answers.
func sendTimes(t *testing.T, s *Sender, url string, n int) []app.Answer {
	t.Helper()
	dest := &app.Destination{Name: "d", URL: url, Timeout: 10 * time.Second, Concurrency: 1}
	var as []app.Answer
	for i := range n {
		e := &app.Event{Source: "s", ID: fmt.Sprint("e-", i), Topic: "t", Body: []byte(`{"i":1}`)}
		as = append(as, s.Send(context.Background(), app.SendRequest{Dest: dest, Work: app.Work{Event: e}, Attempt: 1, Now: time.Now()}))
	}
	return as
}

func newTestSender(t *testing.T) *Sender {
	s := New(&app.Config{Destinations: []*app.Destination{{Name: "d", Concurrency: 1}}}, "test")
	t.Cleanup(s.Close)
	return s
}

// Answers that keep their connection carry the next delivery on it; those
// that end it do not: 1xx answers before the status, an HTTP/1.0 answer
// with keep-alive, Connection: close, an HTTP/1.0 answer without
// keep-alive, trailers after the last chunk.
func TestSend_ConnectionKeptAsTheAnswerSays(t *testing.T) {
	for _, tt := range []struct {
		name, answer string
		conns        int64
	}{
		{"1xxFirst", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 1},
		{"HTTP10KeepAlive", "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", 1},
		{"Trailers", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-Sum: 1\r\n\r\n", 1},
		{"ConnectionClose", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", 3},
		{"HTTP10", "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			url, conns := rawDest(t, tt.answer)
			for i, a := range sendTimes(t, newTestSender(t), url, 3) {
				if !a.Delivered || a.Status != 200 || string(a.Snippet) != "ok" || a.Err != nil || a.Note != "" {
					t.Fatalf("send %d: %+v; want 200 ok", i, a)
				}
			}
			if n := conns.Load(); n != tt.conns {
				t.Errorf("%d connections for three sends; want %d", n, tt.conns)
			}
		})
	}
}

// An answer whose Content-Length headers disagree, or whose chunk size
// overflows, fails the attempt (a conflicting length) or is cut (a chunk
// size), and its connection is not used again.
func TestSend_BadFramingFails(t *testing.T) {
	url, conns := rawDest(t, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nok")
	for _, a := range sendTimes(t, newTestSender(t), url, 2) {
		if a.Delivered || a.Err == nil {
			t.Fatalf("%+v; want a failed attempt", a)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections; want a fresh one each time", n)
	}
	url, conns = rawDest(t, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1ffffffffffffffff\r\nok\r\n0\r\n\r\n")
	for _, a := range sendTimes(t, newTestSender(t), url, 2) {
		if a.Status != 200 || a.Note == "" {
			t.Fatalf("%+v; want the status with a note that the answer was cut", a)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections; want a fresh one each time", n)
	}
}

// An https destination: the handshake checks its certificate for the
// URL's host, and its connection carries the following deliveries.
func TestSend_TLSConnectionReused(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.ProtoMajor != 1 || r.TLS == nil {
			w.WriteHeader(400)
		}
		io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.EnableHTTP2 = true // offered: hookbox must not take it
	srv.StartTLS()
	t.Cleanup(srv.Close)
	s := newTestSender(t)
	s.roots = x509.NewCertPool()
	s.roots.AddCert(srv.Certificate())
	for i, a := range sendTimes(t, s, srv.URL+"/hook", 3) {
		if !a.Delivered || string(a.Snippet) != "ok" {
			t.Fatalf("send %d: %+v", i, a)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for three sends; want one", n)
	}
	// The same server under a name its certificate does not carry.
	other := newTestSender(t)
	other.roots = s.roots
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if a := sendTimes(t, other, "https://localhost:"+port+"/hook", 1)[0]; a.Status != 0 || a.Err == nil || !strings.Contains(a.Err.Error(), "certificate") {
		t.Errorf("a certificate for another name: %+v; want a failed handshake", a)
	}
}

// A destination that closed its side of an idle connection: the next send
// sees it as it takes the connection and goes on a fresh one, instead of
// writing the request into the closed one (and sending it once more).
func TestSend_IdleConnectionClosedIsNotWritten(t *testing.T) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	perConn := make(chan int, 4) // requests read on each connection, as it ends
	halfClosed := make(chan struct{}, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				br, n := bufio.NewReader(c), 0
				for {
					r, err := http.ReadRequest(br)
					if err != nil {
						perConn <- n
						return
					}
					n++
					io.Copy(io.Discard, r.Body)
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
					c.(*net.TCPConn).CloseWrite() // the answer said keep-alive; it closes its side anyway
					halfClosed <- struct{}{}
				}
			}()
		}
	}()
	s := newTestSender(t)
	url := "http://" + ln.Addr().String() + "/hook"
	if a := sendTimes(t, s, url, 1)[0]; !a.Delivered {
		t.Fatalf("first send: %+v", a)
	}
	<-halfClosed
	time.Sleep(2 * checkIdle) // idle long enough to be checked: the time is what this test is about
	if a := sendTimes(t, s, url, 1)[0]; !a.Delivered {
		t.Fatalf("second send: %+v", a)
	}
	if n := <-perConn; n != 1 {
		t.Errorf("the closed connection got %d requests; want only the first", n)
	}
}
