package cli_test

import (
	"bufio"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// The hostile suite, continued (hostile_test.go): attacks on connections and
// on the login, measured by the latency of genuine webhooks meanwhile.

// latencies summarises the durations of genuine requests.
type latencies []time.Duration

func (l latencies) pct(p float64) time.Duration {
	if len(l) == 0 {
		return 0
	}
	s := slices.Clone(l)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func (l latencies) String() string {
	return fmt.Sprintf("%d requests, p50 %v, p90 %v, p99 %v, max %v", len(l), l.pct(0.5).Round(time.Microsecond),
		l.pct(0.9).Round(time.Microsecond), l.pct(0.99).Round(time.Microsecond), l.pct(1).Round(time.Microsecond))
}

// genuineLoad is the genuine webhooks sent during an attack.
type genuineLoad struct {
	wait     func() latencies // waits for the senders to end; their latencies
	accepted atomic.Int64
}

// waitAccepted waits until n genuine webhooks were accepted.
func (g *genuineLoad) waitAccepted(t *testing.T, n int64, within time.Duration) {
	t.Helper()
	apptest.Eventually(t, within, fmt.Sprintf("%d genuine webhooks accepted", n), func() bool { return g.accepted.Load() >= n })
}

// webhooks sends genuine webhooks from ip on senders connections, each
// pausing pause between requests, until stop is closed; every one must be
// accepted.
func webhooks(t *testing.T, addr, ip string, senders int, pause time.Duration, stop <-chan struct{}) *genuineLoad {
	var (
		mu   sync.Mutex
		all  latencies
		errs []string
		wg   sync.WaitGroup
		g    = &genuineLoad{}
	)
	for s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clientFrom(ip, 1)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(pause):
				}
				body := []byte(fmt.Sprintf(`{"sender": %d, "n": %d}`, s, i))
				start := time.Now()
				resp, raw, err := exchange(c, "POST", "http://"+addr+"/in/gh", body, header(githubHeaders(body, e2eSecret, fmt.Sprintf("%s-%d-%d", ip, s, i))))
				took := time.Since(start)
				mu.Lock()
				switch {
				case err != nil:
					errs = append(errs, err.Error())
				case resp.StatusCode != 200:
					errs = append(errs, fmt.Sprintf("%d %s", resp.StatusCode, raw))
				default:
					all = append(all, took)
					g.accepted.Add(1)
				}
				mu.Unlock()
			}
		}()
	}
	g.wait = func() latencies {
		wg.Wait()
		if len(errs) > 0 {
			t.Errorf("%d genuine webhooks failed, e.g. %s", len(errs), errs[0])
		}
		return all
	}
	return g
}

// 3,000 slow connections (from a dozen addresses, each under the
// per-address limit) drip their headers: peak memory stays bounded and
// genuine webhooks keep being accepted meanwhile.
func TestHostile_SlowConnections(t *testing.T) {
	h := startHostile(t)
	const conns, addrs = 3000, 12
	stop := make(chan struct{})
	var open, peak, dials, dialFailed atomic.Int64
	var wg sync.WaitGroup
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(10+i%addrs))}, Timeout: 5 * time.Second}
			for {
				conn, err := d.Dial("tcp", h.addr)
				if err != nil {
					dialFailed.Add(1)
					return
				}
				dials.Add(1)
				n := open.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				io.WriteString(conn, "POST /in/gh HTTP/1.1\r\nHost: hookbox\r\n")
				cut := false
				for j := 0; !cut; j++ {
					select {
					case <-stop:
						conn.Close()
						open.Add(-1)
						return
					case <-time.After(time.Second):
					}
					_, err := fmt.Fprintf(conn, "X-Slow-%d: a\r\n", j)
					cut = err != nil
				}
				conn.Close()
				open.Add(-1)
			}
		}()
	}
	// All connected: every goroutine's first dial done, as the counters say.
	apptest.Eventually(t, 30*time.Second, fmt.Sprintf("%d connections dialled", conns), func() bool { return dials.Load()+dialFailed.Load() >= conns })
	done := webhooks(t, h.addr, "127.0.0.2", 2, 20*time.Millisecond, stop)
	// Past the read timeout, hookbox cuts them and they come back: most
	// have dialled twice, and genuine webhooks went on meanwhile.
	apptest.Eventually(t, 60*time.Second, "the slow connections cut by hookbox and dialled again", func() bool {
		return dials.Load() >= conns+conns*9/10
	})
	done.waitAccepted(t, 100, 30*time.Second)
	close(stop)
	wg.Wait()
	lat := done.wait()
	t.Logf("slow connections: %d open at most (%d dials failed); genuine webhooks meanwhile: %v", peak.Load(), dialFailed.Load(), lat)
	if peak.Load() < conns*9/10 {
		t.Errorf("only %d slow connections were open at once", peak.Load())
	}
	if len(lat) < 100 {
		t.Errorf("only %d genuine webhooks got through", len(lat))
	}
	h.survived(t)
}

// One address gets at most max_connections_per_ip (256) connections; the
// rest are answered 429 and closed at once, and other addresses are
// served meanwhile.
func TestHostile_ConnectionsPerAddress(t *testing.T) {
	h := startHostile(t)
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, 30)}, Timeout: 5 * time.Second}
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	refused, answered := 0, ""
	for range 300 {
		conn, err := d.Dial("tcp", h.addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, conn := range held {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			buf := make([]byte, 512)
			n, err := conn.Read(buf)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return // held open by hookbox, waiting for a request
			}
			mu.Lock()
			defer mu.Unlock()
			refused++
			if n > 0 {
				answered = string(buf[:n])
			}
		}()
	}
	wg.Wait()
	t.Logf("300 connections from 127.0.1.30: %d refused; an answer: %q", refused, answered)
	if refused != 300-256 {
		t.Errorf("%d connections refused; want %d", refused, 300-256)
	}
	if !strings.HasPrefix(answered, "HTTP/1.1 429 ") || !strings.Contains(answered, "Retry-After:") {
		t.Errorf("a refused connection was answered %q; want 429 with Retry-After", answered)
	}
	stop := make(chan struct{})
	done := webhooks(t, h.addr, "127.0.0.2", 1, 10*time.Millisecond, stop)
	done.waitAccepted(t, 1, 10*time.Second)
	close(stop)
	if lat := done.wait(); len(lat) == 0 {
		t.Error("no genuine webhook from another address got through")
	}
	if !strings.Contains(h.logText(), "client=127.0.1.30") {
		t.Errorf("the refusals are not logged with the client address:\n%s", h.logText())
	}
	h.survived(t)
}

// 400 connections send wrong Basic credentials for 10 s. Failed attempts
// are limited per address and in all before any bcrypt runs, so genuine
// webhooks keep p99 under 100 ms; a script with the right password keeps
// working (its credential was verified once and is cached); the log gets
// a few lines, each naming the client.
func TestHostile_AuthFlood(t *testing.T) {
	h := startHostile(t)
	base := "http://" + h.addr
	script := clientFrom("127.0.0.3", 1)
	right := http.Header{}
	right.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("admin:"+h.password)))
	if resp, raw, err := exchange(script, "GET", base+"/api/v1/stats", nil, right); err != nil || resp.StatusCode != 200 {
		t.Fatalf("right password before the flood: %v %v %s", err, resp, raw)
	}

	// The same senders without an attack first: what the machine gives
	// when nobody attacks, to read a failure by.
	calm := make(chan struct{})
	baseline := webhooks(t, h.addr, "127.0.0.2", 4, 20*time.Millisecond, calm)
	baseline.waitAccepted(t, 500, 30*time.Second) // enough for a p99
	close(calm)
	t.Logf("genuine webhooks before the flood: %v", baseline.wait())

	const flood = 10 * time.Second
	stop := make(chan struct{})
	var (
		mu    sync.Mutex
		codes = map[int]int{}
		errs  int
		wg    sync.WaitGroup
	)
	// Each attacker writes its request on a raw keep-alive connection and
	// reads the answer, again and again: a guesser in a closed loop, at
	// little cost to this (under -race, instrumented) test process, which
	// shares the machine's CPU with hookbox.
	for _, ip := range []string{"127.0.1.40", "127.0.1.41"} {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
		for g := range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req := fmt.Sprintf("GET /api/v1/stats HTTP/1.1\r\nHost: hookbox\r\nAuthorization: Basic %s\r\n\r\n",
					base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("admin:guess-%s-%d", ip, g))))
				var conn net.Conn
				var br *bufio.Reader
				defer func() {
					if conn != nil {
						conn.Close()
					}
				}()
				for {
					select {
					case <-stop:
						return
					default:
					}
					code, err := 0, error(nil)
					if conn == nil {
						if conn, err = d.Dial("tcp", h.addr); err == nil {
							br = bufio.NewReader(conn)
						}
					}
					if err == nil {
						conn.SetDeadline(time.Now().Add(10 * time.Second))
						if _, err = io.WriteString(conn, req); err == nil {
							var resp *http.Response
							if resp, err = http.ReadResponse(br, nil); err == nil {
								_, err = io.Copy(io.Discard, resp.Body)
								resp.Body.Close()
								code = resp.StatusCode
							}
						}
					}
					if err != nil && conn != nil {
						conn.Close()
						conn = nil
					}
					mu.Lock()
					if err != nil {
						errs++
					} else {
						codes[code]++
					}
					mu.Unlock()
				}
			}()
		}
	}
	done := webhooks(t, h.addr, "127.0.0.2", 4, 20*time.Millisecond, stop)
	var scriptErrs []string
	var scriptLat latencies
	scriptDone := make(chan struct{})
	go func() {
		defer close(scriptDone)
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			start := time.Now()
			resp, raw, err := exchange(script, "GET", base+"/api/v1/stats", nil, right)
			if err != nil || resp.StatusCode != 200 {
				scriptErrs = append(scriptErrs, fmt.Sprintf("%v %v %s", err, resp, raw))
				continue
			}
			scriptLat = append(scriptLat, time.Since(start))
		}
	}()
	time.Sleep(flood) // the flood lasts 10 s: how the service holds over time is the test
	close(stop)
	wg.Wait()
	lat := done.wait()
	<-scriptDone
	t.Logf("wrong Basic auth from 400 connections for %v: answers %v, %d connection errors", flood, codes, errs)
	t.Logf("genuine webhooks meanwhile: %v", lat)
	t.Logf("a script with the right password meanwhile: %v", scriptLat)
	for code, n := range codes {
		if code != 401 && code != 429 {
			t.Errorf("%d answers %d to wrong credentials", n, code)
		}
	}
	if codes[429] == 0 {
		t.Error("no attempt was refused with 429: failed logins are not limited")
	}
	if len(scriptErrs) > 0 {
		t.Errorf("the script with the right password failed %d times, e.g. %s", len(scriptErrs), scriptErrs[0])
	}
	if p99 := lat.pct(0.99); len(lat) < 200 || p99 >= 100*time.Millisecond {
		t.Errorf("genuine webhooks under the flood: %v; want p99 under 100 ms", lat)
	}
	lines := 0
	for _, l := range strings.Split(h.logText(), "\n") {
		if strings.Contains(l, "login") && strings.Contains(l, "level=WARN") {
			lines++
			if !strings.Contains(l, "client=127.0.1.4") {
				t.Errorf("a security log line without the client address: %s", l)
			}
		}
	}
	t.Logf("%d warning lines about logins in the log", lines)
	if lines == 0 || lines > 20 {
		t.Errorf("%d warning lines about logins; want a few (rate-limited)", lines)
	}
	h.survived(t)
}
