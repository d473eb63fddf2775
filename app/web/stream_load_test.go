package web_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/web"
)

// A listener that stops reading is dropped while another goes on, and the
// server's memory does not grow with what it did not read.
func TestStream_StuckListenerDropped(t *testing.T) {
	defer web.SetStreamTimes(app.StreamPing, 2*time.Second)()
	n := startStreamNode(t, openBolt(t))
	live := openStream(t, n.base, "", "")
	live.notice(t, app.StreamNoticeReady)
	heapBefore := heapInUse()

	conn := stuckClient(t, strings.TrimPrefix(n.base, "http://"))
	apptest.Eventually(t, time.Minute, "two listeners", func() bool { return n.hub.Listeners() == 2 })
	const events = 1500 // 3 MiB of bodies, 4 MiB on the wire: past the socket buffers and StreamQueue
	flood(t, n, live, events)
	apptest.Eventually(t, time.Minute, "the stuck listener dropped", func() bool { return n.hub.Listeners() == 1 })
	heapAfter := heapInUse()
	t.Logf("heap in use: %.1f MiB with one listener, %.1f MiB after %d events of 2 KiB not read by another (dropped)",
		float64(heapBefore)/(1<<20), float64(heapAfter)/(1<<20), events)
	if heapAfter > heapBefore+16<<20 {
		t.Errorf("heap grew by %d MiB", (heapAfter-heapBefore)>>20)
	}
	// What reached the stuck client ends with the dropped notice, or is cut
	// by the write deadline once its buffers are full.
	conn.SetReadBuffer(1 << 20)
	conn.SetReadDeadline(time.Now().Add(time.Minute))
	rest, _ := io.ReadAll(conn)
	t.Logf("the stuck client read %d KiB once it read again; dropped notice: %v", len(rest)>>10, strings.Contains(string(rest), `"kind":"dropped"`))
}

// stuckClient opens a stream at addr on a raw connection that never reads.
func stuckClient(t *testing.T, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn := c.(*net.TCPConn)
	t.Cleanup(func() { conn.Close() })
	conn.SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /api/v1/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Basic b3BzOnB3LTEyMzQ=\r\n\r\n")
	return conn
}

// flood sends events webhooks of 2 KiB to n from 8 clients, and reads
// each on live, which is never more than 64 events behind (a quarter of
// StreamQueue): it keeps up, whatever the machine's speed.
func flood(t *testing.T, n *streamNode, live *sseStream, events int) {
	t.Helper()
	body := []byte(`{"pad":"` + strings.Repeat("x", 2048-10) + `"}`)
	var wg sync.WaitGroup
	ahead := make(chan struct{}, 64)
	next := make(chan int)
	errs := make(chan error, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := postWebhook(n.base, fmt.Sprint("flood", i), "orders/create", body); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	go func() {
		for i := range events {
			ahead <- struct{}{}
			next <- i
		}
		close(next)
	}()
	for range events {
		live.event(t)
		<-ahead
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// The stream's throughput to one listener on 127.0.0.1, and its bytes on
// the wire per event of 2 KiB (base64 of the body, headers, JSON and SSE
// framing): a resume sends stored events as fast as the client reads.
func TestStream_Throughput(t *testing.T) {
	if testing.Short() {
		t.Skip("a measure")
	}
	db := openBolt(t)
	n := startStreamNode(t, db)
	const events = 3000
	body := []byte(`{"pad":"` + strings.Repeat("x", 2048-10) + `"}`)
	var wg sync.WaitGroup
	errs := make(chan error, events)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < events; i += 16 {
				e := &app.Event{Source: "shop", ID: fmt.Sprint("t", i), Topic: "orders/create", ReceivedAt: time.Now(), Body: body,
					Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}, {Name: "X-Shopify-Topic", Value: "orders/create"},
						{Name: "X-Shopify-Hmac-Sha256", Value: "2cT0AoYQ3q4Yb2n8m2R9jJ2v0Kq1l7YkP3e3b6sQy9E="}, {Name: "X-Shopify-Shop-Domain", Value: "a.myshopify.com"}}}
				if _, err := db.Accept(context.Background(), e, time.Now().Add(time.Hour), nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	start := time.Now()
	s := openStream(t, n.base, "", "0")
	for range events {
		s.event(t)
	}
	took := time.Since(start)
	s.notice(t, app.StreamNoticeReady)
	s.res.Body.Close()
	for range s.msgs {
	}
	t.Logf("%d events of 2 KiB to one listener in %s: %.0f events/s, %.1f MiB/s; %d bytes on the wire per event (2048 of body)",
		events, took.Round(time.Millisecond), events/took.Seconds(), float64(*s.read)/took.Seconds()/(1<<20), *s.read/events)
}

// An event of 700 KiB of every byte value, whose length is no multiple of
// 3, arrives byte-exact: the body is encoded as it goes out, a piece at a
// time, not as one message.
func TestStream_LargeBinaryBody(t *testing.T) {
	n := startStreamNode(t, openBolt(t))
	s := openStream(t, n.base, "", "")
	s.notice(t, app.StreamNoticeReady)
	body := make([]byte, 700<<10+1)
	for i := range body {
		body[i] = byte(i * 7)
	}
	sendTo(t, n.base, "big", "orders/create", body)
	if e := s.event(t); e.ID != "big" || !bytes.Equal(e.Body, body) {
		t.Fatalf("event %s: %d bytes of body, equal %v; want %d", e.ID, len(e.Body), bytes.Equal(e.Body, body), len(body))
	}
}
