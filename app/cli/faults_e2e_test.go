package cli_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres/pgtest"
)

// Retention shorter than a debounce window (events kept 3 s, swept every
// second, a 10 s window): the sweep keeps the event its pending delivery
// will send, and the sink gets it when the window ends; on either store.
func TestFault_RetentionShorterThanDebounce(t *testing.T) {
	t.Parallel() // mostly waiting for windows: overlaps the other waiting tests
	eachStore(t, testRetentionShorterThanDebounce)
}

func testRetentionShorterThanDebounce(t *testing.T, st storeCase) {
	sink := newLedgerSink(t, 200)
	dir := t.TempDir()
	config := writeConfig(t, dir, fmt.Sprintf(`
[retention]
events = "3s"
sweep = "@every 1s"

[[destination]]
name = "sink"
url = %q
timeout = "2s"
retry = ["1s"]

[[route]]
name = "entities"
source = "gh"
to = ["sink"]
key = "{body.id}"
debounce = "10s"
`, sink.url), st.config(2*time.Second))
	p := start(t, config)
	body := []byte(`{"id": "entity-1"}`)
	sent := time.Now()
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "debounced-1")); r.code != 200 {
		t.Fatalf("post: %d %v", r.code, r.body)
	}
	apptest.Until(t, 40*time.Second, func() error {
		if len(sink.missing([]string{"debounced-1"})) > 0 {
			return fmt.Errorf("the debounced event never reached the sink (the sweep ran %d times):\n%s",
				strings.Count(p.logText(), "sweep done"), p.logText())
		}
		return nil
	})
	took := time.Since(sent)
	if took < 9*time.Second {
		t.Fatalf("delivered after %v, before its 10 s window ended", took)
	}
	t.Logf("delivered %v after it was accepted, %d sweeps meanwhile", took.Round(100*time.Millisecond), strings.Count(p.logText(), "sweep done"))
	p.stop(t)
}

// The data file emptied (a 0-byte file where events were accepted) or cut
// short (8 KiB, where bbolt would die of SIGBUS): serve refuses to start,
// naming the latest backup and the command that restores it, and changes
// nothing.
func TestFault_DataFileEmptiedOrTruncated(t *testing.T) {
	for _, size := range []int64{0, 8 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			backups := filepath.Join(dir, "backups")
			config := writeConfig(t, dir, fmt.Sprintf("[backup]\nschedule = \"@every 1s\"\ndir = %q\n", backups))
			p := start(t, config)
			for i := range 50 {
				body := []byte(fmt.Sprintf(`{"n": %d}`, i))
				if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, fmt.Sprint("kept-", i))); r.code != 200 {
					t.Fatalf("post: %d %v", r.code, r.body)
				}
			}
			apptest.Eventually(t, 20*time.Second, "a backup taken", func() bool {
				latest, _ := app.LatestBackup(backups)
				return latest != ""
			})
			p.stop(t)
			latest, _ := app.LatestBackup(backups) // the schedule may have taken another before the stop
			data := filepath.Join(dir, "data", bboltstore.FileName)
			if err := os.Truncate(data, size); err != nil {
				t.Fatal(err)
			}
			// Bounded: a serve that takes the file as new would run on.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, clitest.Binary(t), "serve", "-config", config)
			cmd.Env = append(os.Environ(), "E2E_GH_SECRET="+e2eSecret)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("serve started on a data file of %d bytes:\n%s", size, out)
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "hookbox restore -config "+config+" "+latest) ||
				strings.Contains(string(out), "SIGBUS") || strings.Contains(string(out), "goroutine") {
				t.Fatalf("serve on a data file of %d bytes: %v\n%s", size, err, out)
			}
			if fi, err := os.Stat(data); err != nil || fi.Size() != size {
				t.Fatalf("the refused data file changed: %v %v", fi, err)
			}
			t.Logf("serve refused: %s", strings.TrimSpace(string(out)))
		})
	}
}

// A destination whose TCP connect hangs (its accept queue is full, as a
// blackholed address would be), or one that takes the request and never
// answers, timeout 60 s: SIGTERM ends hookbox within 10 s, and after a
// restart, with the destination answering, every acknowledged event is
// delivered (on PostgreSQL at once, not after its lease: the stopping node
// gives back what it had leased).
func TestFault_StopWithHangingDestination(t *testing.T) {
	// Not parallel: it binds the hanging port again for the sink after the
	// stop, and under parallel tests that bind once failed (in use).
	eachStore(t, testStopWithHangingDestination)
}

func testStopWithHangingDestination(t *testing.T, st storeCase) {
	for _, mode := range []string{"ConnectHangs", "AnswerHangs"} {
		t.Run(mode, func(t *testing.T) {
			if st.url != "" {
				st.url = pgtest.URL(t) // a database of each mode's own
			}
			port := freePort(t)
			addr := fmt.Sprintf("127.0.0.1:%d", port)
			var sink *ledgerSink
			var release func()
			if mode == "ConnectHangs" {
				release = hangingListener(t, port)
			} else {
				hold := make(chan struct{})
				sink = newLedgerSinkOn(t, addr, 200, hold)
				release = sync.OnceFunc(func() { close(hold) })
				t.Cleanup(release)
			}
			dir := t.TempDir()
			config := writeConfig(t, dir, fmt.Sprintf(`
[[destination]]
name = "hangs"
url = "http://%s/hook"
timeout = "60s"
retry = ["1s", "1s", "1s", "1s", "1s"]

[[route]]
source = "gh"
to = ["hangs"]
`, addr), st.config(60*time.Second))
			p := start(t, config)
			var acked []string
			for i := range 20 {
				id := fmt.Sprint("hang-", i)
				body := []byte(fmt.Sprintf(`{"n": %d}`, i))
				if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, id)); r.code != 200 {
					t.Fatalf("post: %d %v", r.code, r.body)
				}
				acked = append(acked, id)
			}
			if mode == "ConnectHangs" {
				waitSynSent(t, port, 20*time.Second)
			} else {
				sink.waitAttempts(t, 1, 20*time.Second)
			}

			signalled := time.Now()
			p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(90 * time.Second):
				t.Fatalf("hookbox still running 90 s after SIGTERM:\n%s", p.logText())
			}
			err := p.cmd.Wait()
			took := time.Since(signalled)
			t.Logf("SIGTERM to exit, the destination hanging (timeout 60s): %v", took.Round(10*time.Millisecond))
			if err != nil || took > 10*time.Second {
				t.Fatalf("exit %v after %v; want a clean exit within 10 s:\n%s", err, took, p.logText())
			}

			release()
			if sink == nil {
				sink = newLedgerSinkOn(t, addr, 200, nil)
			}
			p = start(t, config)
			sink.waitDelivered(t, acked, 60*time.Second)
			p.stop(t)
		})
	}
}

// hangingListener listens on 127.0.0.1:port with its accept queue full, so
// that a TCP connect to it hangs (the kernel drops the SYN) until the
// dialer gives up; the returned func (also run at the end) closes it.
func hangingListener(t *testing.T, port int) func() {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // one connection fills it
		syscall.Close(fd)
		t.Fatal(err)
	}
	var held []net.Conn
	for len(held) < 8 {
		c, err := net.DialTimeout("tcp4", fmt.Sprintf("127.0.0.1:%d", port), 300*time.Millisecond)
		if err != nil {
			break // full: connects hang from here on
		}
		held = append(held, c)
	}
	closeAll := sync.OnceFunc(func() {
		for _, c := range held {
			c.Close()
		}
		syscall.Close(fd)
	})
	t.Cleanup(closeAll)
	return closeAll
}

// waitSynSent waits until a TCP connect to 127.0.0.1:port is in progress
// (SYN_SENT in /proc/net/tcp).
func waitSynSent(t *testing.T, port int, within time.Duration) {
	t.Helper()
	apptest.Eventually(t, within, fmt.Sprintf("a connect to port %d in progress", port), func() bool {
		return tcpStateTo(t, port, "02")
	})
}

// tcpEstablishedTo reports whether a TCP connection to 127.0.0.1:port is
// established (/proc/net/tcp).
func tcpEstablishedTo(t *testing.T, port int) bool { return tcpStateTo(t, port, "01") }

// tcpStateTo reports whether a TCP connection to 127.0.0.1:port is in
// state (as /proc/net/tcp writes it: 01 established, 02 SYN_SENT),
// skipping the test where the table cannot be read.
func tcpStateTo(t *testing.T, port int, state string) bool {
	t.Helper()
	want := fmt.Sprintf("0100007F:%04X", port)
	table, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Skipf("cannot see TCP connections: %v", err)
	}
	for _, line := range strings.Split(string(table), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[2] == want && f[3] == state {
			return true
		}
	}
	return false
}

// A destination answers 503 while events arrive, with retry = ["5m",
// "30m"], until hookbox says it is failing: once it answers 200 again, a probe finds out and every waiting event is
// delivered within 60 s, not at its 5-minute step; on either store.
func TestFault_RecoveryAfterOutage(t *testing.T) {
	t.Parallel() // mostly waiting for retries: overlaps the other waiting tests
	eachStore(t, testRecoveryAfterOutage)
}

func testRecoveryAfterOutage(t *testing.T, st storeCase) {
	sink := newLedgerSink(t, 503)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["5m", "30m"]`), st.config(2*time.Second))
	p := start(t, config)
	stop := make(chan struct{})
	load := loadGH(t, p.addr, "outage", 8, stop)
	sink.waitAttempts(t, 1, 20*time.Second)
	failingFrom := time.Now()
	load.waitAcked(t, failingFrom, 100, 20*time.Second) // events keep coming while it fails
	close(stop)
	var acked []string
	for _, a := range load.wait() {
		acked = append(acked, a.id)
	}
	apptest.Eventually(t, 20*time.Second, "the destination failing in the API", func() bool { return sinkState(t, p.addr).FailingSince != nil })
	sink.code.Store(200)
	opened := time.Now()
	failedAttempts := sink.attempts.Load()
	var first time.Time // the first delivery: the probe that found it back
	apptest.Eventually(t, 90*time.Second, "every waiting event delivered", func() bool {
		n := len(sink.missing(acked))
		if first.IsZero() && n < len(acked) {
			first = time.Now()
		}
		return n == 0
	})
	took := time.Since(opened)
	missing := len(sink.missing(acked))
	t.Logf("%d events waiting after %d failed attempts in a %v outage; all delivered %v after the destination answered 200 again (%v after the first one)",
		len(acked), failedAttempts, opened.Sub(failingFrom).Round(100*time.Millisecond), took.Round(100*time.Millisecond), time.Since(first).Round(10*time.Millisecond))
	if missing > 0 || took > 60*time.Second {
		t.Fatalf("%d of %d events not delivered %v after the destination answered again:\n%s", missing, len(acked), took, p.logText())
	}
	p.stop(t)
}
