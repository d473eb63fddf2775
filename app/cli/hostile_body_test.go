package cli_test

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// The hostile suite, continued: bodies that are declared and never sent.

// startHostileServer is startHostile with lines for the [server] table.
func startHostileServer(t *testing.T, server string, extra ...string) *hostile {
	t.Helper()
	config := writeConfigServer(t, t.TempDir(), server, append([]string{"[status]\nmetrics_public = true"}, extra...)...)
	h := &hostile{proc: startBinary(t, shippedBinary(t), config, []string{"E2E_GH_SECRET=" + e2eSecret})}
	m := generatedRE.FindStringSubmatch(h.logText())
	if m == nil {
		t.Fatalf("no generated password in the log:\n%s", h.logText())
	}
	h.password = m[1]
	return h
}

// rss is the process's resident memory now (VmRSS), in bytes; 0 when it
// cannot be read.
func (p *proc) rss() int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// needFiles raises this process's open-file limit to at least n, or skips.
func needFiles(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur >= n {
		return
	}
	if lim.Max < n {
		t.Skipf("RLIMIT_NOFILE hard limit %d is under the %d sockets this test opens", lim.Max, n)
	}
	lim.Cur = n
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Skipf("cannot raise RLIMIT_NOFILE to %d: %v", n, err)
	}
}

// 256 connections from each of 16 addresses (127.0.0.1 … 127.0.0.16,
// each at max_connections_per_ip, 4,096 in all) send the headers of a
// POST /in/gh that declares Content-Length: 1048576 (max_body_bytes, so
// it is not refused as too large), then drip a byte every 2 s, and come
// back when hookbox cuts them at the read timeout. A body is held only as
// it arrives: peak RSS stays under 256 MB, and genuine signed webhooks
// from 127.0.0.17 keep p99 under 100 ms meanwhile. (Before, each
// connection reserved the declared MiB at its headers: issue 24 measured
// 4.27 GB from 16 addresses.)
func TestHostile_DeclaredLengths(t *testing.T) {
	declaredLengths(t, 0)
}

// The same 4,096 connections send the first 64 KiB of their declared MiB
// at once, then drip: each body would hold a piece of 64 KiB, 256 MiB in
// all (425 MiB peak RSS measured with the budget set out of reach), but
// what bodies hold past their first 8 KiB comes out of
// max_body_bytes_total (64 MiB); the connections past it get 503 and come
// back. Peak RSS stays under 256 MB and every genuine webhook is
// accepted. Their latency is logged, not bounded (p99 32 ms measured, 65
// ms under -race): each refusal brings a new dial and 64 KiB more, a
// flood whose cost on a shared machine varies.
func TestHostile_DeclaredLengthsPartSent(t *testing.T) {
	h := declaredLengths(t, 64<<10)
	if !strings.Contains(h.logText(), "max_body_bytes_total") {
		t.Errorf("no refusal for max_body_bytes_total in the log:\n%s", h.logText())
	}
}

// declaredLengths runs the attack of TestHostile_DeclaredLengths, each
// connection sending sent bytes of its body at once before it drips.
func declaredLengths(t *testing.T, sent int) *hostile {
	const addrs, perAddr = 16, 256 // max_connections_per_ip's default
	const conns = addrs * perAddr
	needFiles(t, 2*conns+1024)
	// max_connections leaves room for the genuine sender beside the
	// attack, which takes all that each of its addresses may have.
	h := startHostileServer(t, fmt.Sprintf("max_connections = %d", conns+64))
	head := "POST /in/gh HTTP/1.1\r\nHost: hookbox\r\nContent-Type: application/json\r\nX-GitHub-Event: push\r\n" +
		"X-GitHub-Delivery: drip\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: 1048576\r\n\r\n" + strings.Repeat("{", sent)

	// A watch on the process's memory ends the attack early past twice the
	// limit (the test fails then anyway), so that the machine it shares
	// with others is not driven into swap by the old behaviour.
	const attack = 14 * time.Second // past the 10 s read timeout: cut, they come back
	stop := make(chan struct{})
	var stopOnce sync.Once
	end := func() { stopOnce.Do(func() { close(stop) }) }
	var aborted atomic.Int64
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if r := h.rss(); r > 2*peakRSSLimit {
				aborted.Store(r)
				end()
			}
		}
	}()

	// One goroutine an address keeps its 256 connections, so that this
	// process (instrumented under -race, on the same cores as hookbox)
	// costs little: every 2 s it writes a byte on each, and one that
	// hookbox closed (cut at the read timeout, or its body refused) is
	// dialled again, as an attacker would.
	var open, peak, dials, dialFailed, cut atomic.Int64
	var wg sync.WaitGroup
	for a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(1+a))}, Timeout: 5 * time.Second}
			conns := make([]net.Conn, perAddr)
			defer func() {
				for _, c := range conns {
					if c != nil {
						c.Close()
					}
				}
			}()
			drop := func(j int) {
				conns[j].Close()
				conns[j] = nil
				open.Add(-1)
				cut.Add(1)
			}
			dial := func(j int) {
				c, err := d.Dial("tcp", h.addr)
				if err != nil {
					dialFailed.Add(1)
					return
				}
				dials.Add(1)
				conns[j] = c
				n := open.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				c.SetWriteDeadline(time.Now().Add(time.Second))
				if _, err := io.WriteString(c, head); err != nil {
					drop(j)
				}
			}
			// Ramp up over about 2 s, as clients from afar would arrive.
			for j := range conns {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Second / perAddr):
				}
				dial(j)
			}
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Second):
				}
				for j, c := range conns {
					if c != nil && answered(c) {
						drop(j)
						c = nil
					}
					if c == nil {
						dial(j)
						continue
					}
					c.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := io.WriteString(c, "{"); err != nil {
						drop(j)
					}
				}
			}
		}()
	}
	// All connected: every dial of the ramp done, as the counters say.
	apptest.Eventually(t, 30*time.Second, fmt.Sprintf("%d connections dialled", addrs*perAddr), func() bool {
		return dials.Load()+dialFailed.Load() >= int64(addrs*perAddr)
	})
	t.Logf("after the ramp: %d slow connections open, peak RSS %.1f MiB", open.Load(), float64(h.peakRSS(t))/(1<<20))
	done := webhooks(t, h.addr, "127.0.0.17", 2, 20*time.Millisecond, stop)
	select {
	case <-stop:
	case <-time.After(attack - 3*time.Second):
	}
	end()
	wg.Wait()
	lat := done.wait()
	t.Logf("declared 1 MiB bodies, %d bytes sent at once: %d connections open at most, %d dials (%d failed), %d closed by hookbox; genuine webhooks meanwhile: %v",
		sent, peak.Load(), dials.Load(), dialFailed.Load(), cut.Load(), lat)
	if r := aborted.Load(); r > 0 {
		t.Fatalf("the attack was stopped early: hookbox's RSS reached %.1f MiB (limit %d MiB)", float64(r)/(1<<20), peakRSSLimit>>20)
	}
	switch {
	case sent == 0 && peak.Load() < conns*9/10:
		t.Errorf("only %d slow connections were open at once; want about %d", peak.Load(), conns)
	case sent > 0 && dials.Load() < conns:
		t.Errorf("only %d connections were made; want %d at least", dials.Load(), conns)
	}
	if p99 := lat.pct(0.99); len(lat) < 100 || sent == 0 && p99 >= 100*time.Millisecond {
		t.Errorf("genuine webhooks under the attack: %v; want p99 under 100 ms", lat)
	}
	waitServing(t, h)
	h.survived(t)
	return h
}

// answered reports, without waiting, whether hookbox has answered or
// closed c: it only does so when it ends the connection.
func answered(c net.Conn) bool {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return true
	}
	ended := true
	rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ended = err != syscall.EAGAIN // a byte, the end, or an error
		return true
	})
	return ended
}

// waitServing waits until hookbox answers /healthz from 127.0.0.1 again,
// once the attack's connections from there are closed on its side too.
func waitServing(t *testing.T, h *hostile) {
	t.Helper()
	c := clientFrom("127.0.0.1", 1)
	apptest.Until(t, 10*time.Second, func() error {
		resp, _, err := exchange(c, "GET", "http://"+h.addr+"/healthz", nil, nil)
		if err != nil || resp.StatusCode != 200 {
			return fmt.Errorf("hookbox does not answer /healthz after the attack: %v %v", err, resp)
		}
		return nil
	})
}
