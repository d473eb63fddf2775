package web_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

// newBodyServer is newEdgeServer with a read timeout of its own.
func newBodyServer(t *testing.T, server string, readTimeout time.Duration) *edgeServer {
	t.Helper()
	cfg := mustConfig(t, "[server]\n"+server+`
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
	e := &edgeServer{db: db, log: &syncBuffer{}}
	e.srv = web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping, ReadTimeout: readTimeout})
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

// allocated is what this process has allocated on the heap so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// A declared Content-Length costs nothing until its bytes arrive: 32
// connections declare 1 MiB (max_body_bytes) and send no byte of it, or
// 100 KiB of it, until the read timeout answers them; what the whole
// process (server and these clients) allocated meanwhile stays far under
// the declared MiB a connection (fasthttp alone reserved it at the
// headers).
func TestServer_DeclaredLengthNotReserved(t *testing.T) {
	const declared = 1 << 20
	e := newBodyServer(t, fmt.Sprintf("max_body_bytes = %d", declared), 500*time.Millisecond)
	for _, tt := range []struct {
		name    string
		sent    int
		perConn uint64 // the most a connection may cost
	}{
		{"NoByte", 0, 64 << 10},
		// Held as it arrives: pieces of 16, 32, 64 and 128 KiB.
		{"100KiB", 100 << 10, 320 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const conns = 32
			head := fmt.Sprintf("POST /in/shop HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", declared)
			part := bytes.Repeat([]byte("a"), tt.sent)
			runtime.GC()
			before := allocated()
			var wg sync.WaitGroup
			answers := make([]string, conns)
			for i := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := net.Dial("tcp", e.addr)
					if err != nil {
						answers[i] = err.Error()
						return
					}
					defer c.Close()
					c.SetDeadline(time.Now().Add(10 * time.Second))
					io.WriteString(c, head)
					c.Write(part)
					resp, err := http.ReadResponse(bufio.NewReader(c), nil) // the read timeout's answer
					if err != nil {
						answers[i] = err.Error()
						return
					}
					resp.Body.Close()
					answers[i] = resp.Status
				}()
			}
			wg.Wait()
			got := allocated() - before
			t.Logf("%d connections declaring %d bytes, %d sent: %d KiB allocated in all (%d KiB each), answers e.g. %q",
				conns, declared, tt.sent, got>>10, got/conns>>10, answers[0])
			for _, a := range answers {
				if !strings.HasPrefix(a, "408") {
					t.Fatalf("answer %q; want 408 at the read timeout", a)
				}
			}
			if got > conns*tt.perConn {
				t.Errorf("allocated %d KiB for %d connections; want at most %d KiB each", got>>10, conns, tt.perConn>>10)
			}
		})
	}
}

// A body of exactly max_body_bytes is accepted and stored byte for byte,
// sent with a Content-Length or in chunks; one byte more gets 413 either
// way, as does a declared length over it. The sizes around fasthttp's
// first read of a body (8 KiB) are accepted byte-exact too.
func TestServer_BodyLimits(t *testing.T) {
	const limit = 64 << 10
	e := newBodyServer(t, fmt.Sprintf("max_body_bytes = %d", limit), 0)
	body := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i*7 + i>>8) // not the same bytes at every offset
		}
		return b
	}
	for _, tt := range []struct {
		name    string
		size    int
		chunked bool
		expect  bool // Expect: 100-continue, the body after hookbox's 100
		want    int
	}{
		{"Empty", 0, false, false, 200},
		{"Small", 300, false, false, 200},
		{"FirstRead", 8 << 10, false, false, 200},
		{"PastFirstRead", 8<<10 + 1, false, false, 200},
		{"Limit", limit, false, false, 200},
		{"LimitChunked", limit, true, false, 200},
		{"SmallChunked", 300, true, false, 200},
		{"ExpectContinue", 20 << 10, false, true, 200},
		{"ExpectContinueSmall", 300, false, true, 200},
		{"OverLimit", limit + 1, false, false, 413},
		{"OverLimitChunked", limit + 1, true, false, 413},
		// A sender still writing when hookbox refuses reads the 413, not a
		// reset (hookbox drops what follows, up to lingerBytes).
		{"OverLimitRead", 8 * limit, false, false, 413},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := body(tt.size)
			id := "limits-" + tt.name
			h := signShop(t, b, id)
			req, _ := http.NewRequest("POST", "http://"+e.addr+"/in/shop", bytes.NewReader(b))
			if tt.chunked {
				req, _ = http.NewRequest("POST", "http://"+e.addr+"/in/shop", io.MultiReader(bytes.NewReader(b))) // no length known: chunked
			}
			for k, v := range h {
				req.Header[k] = v
			}
			if tt.expect {
				req.Header.Set("Expect", "100-continue")
			}
			resp, err := (&http.Client{Transport: &http.Transport{DisableCompression: true, ExpectContinueTimeout: 5 * time.Second}}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("answer %d %s; want %d", resp.StatusCode, raw, tt.want)
			}
			if tt.want == 413 {
				if !strings.Contains(string(raw), "body larger than max_body_bytes") {
					t.Errorf("413 says %s", raw)
				}
				return
			}
			_, seq, ok, err := e.db.LookupID(context.Background(), "shop", id)
			if !ok || err != nil {
				t.Fatalf("not stored: %v", err)
			}
			ev, err := e.db.Event(context.Background(), seq)
			if err != nil || !bytes.Equal(ev.Body, b) {
				t.Fatalf("stored %d bytes, %v; want the %d bytes sent", len(ev.Body), err, len(b))
			}
		})
	}
	// Bodies read in pieces, chunked or not, end where their framing says:
	// the requests after them on the same connection (here pipelined) are
	// read as sent.
	t.Run("KeepAlive", func(t *testing.T) {
		c, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		var all bytes.Buffer
		sizes := []int{20 << 10, 300, 40 << 10, 8 << 10, 0}
		for i, n := range sizes {
			b := body(n)
			fmt.Fprintf(&all, "POST /in/shop HTTP/1.1\r\nHost: x\r\n")
			for k, v := range signShop(t, b, fmt.Sprint("keepalive-", i)) {
				fmt.Fprintf(&all, "%s: %s\r\n", k, v[0])
			}
			if i%2 == 0 { // chunked, in two chunks
				fmt.Fprintf(&all, "Transfer-Encoding: chunked\r\n\r\n")
				if h := n / 2; h > 0 {
					fmt.Fprintf(&all, "%x\r\n%s\r\n", h, b[:h])
				}
				if n-n/2 > 0 {
					fmt.Fprintf(&all, "%x\r\n%s\r\n", n-n/2, b[n/2:])
				}
				all.WriteString("0\r\n\r\n")
			} else {
				fmt.Fprintf(&all, "Content-Length: %d\r\n\r\n%s", n, b)
			}
		}
		c.Write(all.Bytes())
		br := bufio.NewReader(c)
		for i, n := range sizes {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("answer %d: %v", i, err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("request %d (%d bytes): %d %s", i, n, resp.StatusCode, raw)
			}
			_, seq, ok, err := e.db.LookupID(context.Background(), "shop", fmt.Sprint("keepalive-", i))
			if !ok || err != nil {
				t.Fatalf("request %d not stored: %v", i, err)
			}
			if ev, err := e.db.Event(context.Background(), seq); err != nil || !bytes.Equal(ev.Body, body(n)) {
				t.Fatalf("request %d: stored %d bytes, %v; want the %d sent", i, len(ev.Body), err, n)
			}
		}
	})
	// A declared length over the limit gets 413 once the first bytes are
	// in, on every route, with or without a login.
	for _, path := range []string{"/in/shop", "/login", "/api/v1/replay", "/no-such-page"} {
		t.Run("Declared"+path, func(t *testing.T) {
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", path, 10*limit)
			c.Write(body(limit + 1))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 413 || !resp.Close {
				t.Errorf("answer %s (close %v); want 413 and the connection closed", resp.Status, resp.Close)
			}
		})
	}
}

// The bodies being read share server.max_body_bytes_total: while two
// connections hold most of it, a body that needs more is refused with 503
// and Retry-After and its connection closed, a small webhook is still
// accepted (chunked too), and once the first bodies are complete the
// budget is back.
func TestServer_BodyBudget(t *testing.T) {
	const limit = 64 << 10
	e := newBodyServer(t, fmt.Sprintf("max_body_bytes = %d\nmax_body_bytes_total = %d", limit, 2*limit), 0)
	big := bytes.Repeat([]byte("b"), 40<<10)
	post := func(b []byte, id string) (*http.Response, string) {
		c := &http.Client{Transport: &http.Transport{DisableCompression: true, DisableKeepAlives: true}}
		var r io.Reader = bytes.NewReader(b)
		if strings.HasPrefix(id, "chunked") {
			r = io.MultiReader(r) // no length known: sent in chunks
		}
		req, _ := http.NewRequest("POST", "http://"+e.addr+"/in/shop", r)
		for k, v := range signShop(t, b, id) {
			req.Header[k] = v
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, string(raw)
	}

	// Each holder declares limit and sends 40 KiB of it: its body grows
	// to a piece of 64 KiB, 56 KiB of it from the budget; 16 KiB are left.
	held := append(bytes.Clone(big), bytes.Repeat([]byte("c"), limit-len(big))...)
	var holders []net.Conn
	for i := range 2 {
		hold, err := net.Dial("tcp", e.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Close()
		var head strings.Builder
		head.WriteString("POST /in/shop HTTP/1.1\r\nHost: x\r\n")
		for k, v := range signShop(t, held, fmt.Sprint("holder-", i)) {
			fmt.Fprintf(&head, "%s: %s\r\n", k, v[0])
		}
		fmt.Fprintf(&head, "Content-Length: %d\r\n\r\n", limit)
		io.WriteString(hold, head.String())
		hold.Write(held[:len(big)])
		holders = append(holders, hold)
	}

	// Once hookbox has read those bytes (a probe before then could take
	// the budget a holder needs), a probe that needs more is refused.
	apptest.Until(t, 5*time.Second, func() error {
		if left := e.srv.BodyBudgetLeft(); left != 16<<10 {
			return fmt.Errorf("%d bytes of the budget left; want 16 KiB once the holders' bytes are read", left)
		}
		return nil
	})
	resp, answer := post(big, "probe")
	if resp.StatusCode != 503 {
		t.Fatalf("probe: %d %s; want 503", resp.StatusCode, answer)
	}
	if resp.Header.Get("Retry-After") == "" || !resp.Close || !strings.Contains(answer, "retry later") {
		t.Errorf("refused probe: %v %s; want Retry-After, the connection closed and a reason", resp.Header, answer)
	}
	if !strings.Contains(e.log.String(), "max_body_bytes_total") || !strings.Contains(e.log.String(), "client=127.0.0.1") {
		t.Errorf("the refusal is not logged with its client:\n%s", e.log.String())
	}
	if resp, answer := post([]byte(`{"small": true}`), "small"); resp.StatusCode != 200 {
		t.Errorf("a small webhook while the budget is held: %d %s", resp.StatusCode, answer)
	}
	if resp, answer := post([]byte(`{"small": "chunked"}`), "chunked-small"); resp.StatusCode != 200 {
		t.Errorf("a small chunked webhook while the budget is held: %d %s", resp.StatusCode, answer)
	}

	for i, hold := range holders {
		hold.Write(held[len(big):])
		hold.SetReadDeadline(time.Now().Add(5 * time.Second))
		hr, err := http.ReadResponse(bufio.NewReader(hold), nil)
		if err != nil || hr.StatusCode != 200 {
			t.Fatalf("holder %d's complete body: %v %v", i, hr, err)
		}
		hr.Body.Close()
	}
	if resp, answer := post(big, "after"); resp.StatusCode != 200 {
		t.Errorf("a 40 KiB body once the budget is back: %d %s", resp.StatusCode, answer)
	}
	if left := e.srv.BodyBudgetLeft(); left != 2*limit {
		t.Errorf("%d bytes of the budget left once every body is answered; want all %d", left, 2*limit)
	}
}
