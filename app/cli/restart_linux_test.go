package cli_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
	"hookbox/storage/postgres/pgtest"
)

// activated is a hookbox started as systemd starts it under a socket
// unit: the listening socket at fd 3, LISTEN_FDS=1 and LISTEN_PID set to
// the pid of the process that runs hookbox (sh's, which exec keeps).
type activated struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	log    bytes.Buffer
	exited chan struct{}
}

func (a *activated) logText() string { a.mu.Lock(); defer a.mu.Unlock(); return a.log.String() }

// startActivated runs hookbox serve -config config on the socket ln
// holds, with env added.
func startActivated(t *testing.T, ln *net.TCPListener, config string, env ...string) *activated {
	t.Helper()
	f, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close() // the child has its own copy
	a := &activated{exited: make(chan struct{})}
	a.cmd = exec.Command("sh", "-c", `LISTEN_PID=$$ exec "$0" serve -config "$1" -listen "$2"`, clitest.Binary(t), config, ln.Addr().String())
	a.cmd.Env = append(os.Environ(), append([]string{"LISTEN_FDS=1", "LISTEN_FDNAMES=hookbox", "E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e"}, env...)...)
	a.cmd.ExtraFiles = []*os.File{f}
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			a.mu.Lock()
			a.log.WriteString(sc.Text() + "\n")
			a.mu.Unlock()
		}
		a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		<-a.exited
	})
	return a
}

// stop sends SIGTERM and waits for the exit, which must be clean.
func (a *activated) stop(t *testing.T) {
	t.Helper()
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("hookbox still running 30 s after SIGTERM:\n%s", a.logText())
	}
	if !a.cmd.ProcessState.Success() {
		t.Fatalf("hookbox exit: %v\n%s", a.cmd.ProcessState, a.logText())
	}
}

// Restarts refuse no webhook (issue 46): hookbox takes its listening
// socket from the service manager as systemd passes it, and while one
// process drains and the next starts, the kernel queues new connections
// on the socket the manager (here the test) holds. 500 signed webhooks a
// second through three restarts (SIGTERM, then a new process on the same
// socket): no connection refused, every answer 2xx, every accepted event
// delivered once. The longest a sender waited is logged. On main, hookbox
// ignored the socket passed and could not bind its address (in use).
func TestRestart_RefusesNone(t *testing.T) {
	t.Run("bbolt", func(t *testing.T) { t.Parallel(); testRestartRefusesNone(t, storeCase{name: "bbolt"}) })
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		testRestartRefusesNone(t, storeCase{name: "postgres", url: pgtest.URL(t)})
	})
}

const (
	restartRate     = 500 // webhooks a second
	restartRounds   = 3
	restartSettle   = 3 * time.Second // of load before each restart, and after the last
	restartSenders  = 128             // connections a sender keeps at most (below max_connections_per_ip)
	restartDeadline = 30 * time.Second
)

// restartLoad is the senders: one request every 1/rate, each waiting its
// turn for one of the client's connections, as a platform's queue does.
type restartLoad struct {
	client   *http.Client
	addr     string
	prefix   string
	wg       sync.WaitGroup
	mu       sync.Mutex
	accepted map[string]bool
	refused  atomic.Int64
	failed   []string // transport errors other than a refusal, and answers other than 2xx
	waits    []span   // every request: when it began, how long its sender waited
	sent     atomic.Int64
}

// span is a request's time, or a restart's (SIGTERM to the next process started).
type span struct {
	id         string
	begin, end time.Time
}

// longest is the longest of waits that overlap one of within (all of
// them when within is nil).
func longest(waits, within []span) span {
	var max span
	for _, w := range waits {
		overlaps := within == nil
		for _, r := range within {
			overlaps = overlaps || w.begin.Before(r.end) && w.end.After(r.begin)
		}
		if overlaps && w.end.Sub(w.begin) > max.end.Sub(max.begin) {
			max = w
		}
	}
	return max
}

// settle waits until the senders have sent restartSettle's worth of
// webhooks more: the signal is their count, not the clock.
func (l *restartLoad) settle(t *testing.T) {
	t.Helper()
	target := l.sent.Load() + int64(restartRate*restartSettle/time.Second)
	apptest.Until(t, restartDeadline, func() error {
		if n := l.sent.Load(); n < target {
			return fmt.Errorf("%d of %d webhooks sent", n, target)
		}
		return nil
	})
}

func (l *restartLoad) run(stop <-chan struct{}) {
	tick := time.NewTicker(time.Second / restartRate)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		id := fmt.Sprintf("%s-%d", l.prefix, i)
		l.wg.Add(1)
		go func() { defer l.wg.Done(); l.send(id) }()
	}
}

func (l *restartLoad) send(id string) {
	l.sent.Add(1)
	body := crashBody(id)
	req, _ := http.NewRequest("POST", "http://"+l.addr+"/in/gh", bytes.NewReader(body))
	for k, v := range githubHeaders(body, e2eSecret, id) {
		req.Header.Set(k, v)
	}
	begin := time.Now()
	resp, err := l.client.Do(req)
	end := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits = append(l.waits, span{id: id, begin: begin, end: end})
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		l.refused.Add(1)
	case err != nil:
		l.failed = append(l.failed, fmt.Sprintf("%s: %v", id, err))
	default:
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			l.failed = append(l.failed, fmt.Sprintf("%s: %s", id, resp.Status))
		} else {
			l.accepted[id] = true
		}
	}
}

func testRestartRefusesNone(t *testing.T, st storeCase) {
	sink := newFlakySink(t, 0)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["1s"]`), st.config(2*time.Second))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := l.(*net.TCPListener)
	defer ln.Close() // the manager's copy: it outlives every process
	load := &restartLoad{addr: ln.Addr().String(), prefix: "restart-" + st.name, accepted: map[string]bool{},
		client: &http.Client{Timeout: restartDeadline, Transport: &http.Transport{MaxConnsPerHost: restartSenders, MaxIdleConnsPerHost: restartSenders}}}

	p := startActivated(t, ln, config)
	stop, ran := make(chan struct{}), make(chan struct{})
	go func() { defer close(ran); load.run(stop) }()
	var restarts []span
	for round := range restartRounds {
		load.settle(t) // load that the restart interrupts
		if round == 0 && !strings.Contains(p.logText(), `listen_from="the service manager"`) {
			t.Fatalf("hookbox did not take the socket passed:\n%s", p.logText())
		}
		begin := time.Now()
		p.stop(t)
		p = startActivated(t, ln, config)
		apptest.Until(t, restartDeadline, func() error {
			if !strings.Contains(p.logText(), "hookbox started") {
				return fmt.Errorf("the new process has not started:\n%s", p.logText())
			}
			return nil
		})
		restarts = append(restarts, span{begin: begin, end: time.Now()})
	}
	load.settle(t)
	close(stop)
	<-ran // no wg.Add after this: an Add racing the Wait is a race (the detector says so)
	load.wg.Wait()

	load.mu.Lock()
	accepted := maps.Clone(load.accepted)
	failed, during, all := load.failed, longest(load.waits, restarts), longest(load.waits, nil)
	load.mu.Unlock()
	var took []time.Duration
	for _, r := range restarts {
		took = append(took, r.end.Sub(r.begin).Round(time.Millisecond))
	}
	t.Logf("%s: %d webhooks at %d/s, %d restarts (SIGTERM to the next process started: %v): %d refused, %d failed or not 2xx, %d accepted; the longest a sender waited during a restart: %v (%s), at any time: %v (%s)",
		st.name, load.sent.Load(), restartRate, restartRounds, took, load.refused.Load(), len(failed), len(accepted),
		during.end.Sub(during.begin).Round(time.Millisecond), during.id, all.end.Sub(all.begin).Round(time.Millisecond), all.id)
	if n := load.refused.Load(); n > 0 {
		t.Errorf("%d connections refused during the restarts", n)
	}
	if len(failed) > 0 {
		t.Errorf("%d requests failed or were answered other than 2xx, first %q", len(failed), failed[:min(5, len(failed))])
	}
	apptest.Until(t, 60*time.Second, func() error {
		if delivered, missing, _ := sink.counts(accepted); len(missing) > 0 {
			return fmt.Errorf("%d of %d accepted events delivered; missing e.g. %v", delivered, len(accepted), missing[:min(5, len(missing))])
		}
		return nil
	})
	if _, _, repeats := sink.counts(accepted); repeats > 0 {
		t.Errorf("%d accepted events were delivered more than once", repeats)
	}
	p.stop(t)
}

// Under Type=notify, hookbox tells systemd READY=1 once it serves (the
// socket passed answers /healthz by then), a STATUS= line, WATCHDOG=1
// from the storage probe while WatchdogSec= asks, and STOPPING=1 at
// SIGTERM; a command destination inherits neither the socket nor the
// manager's variables (issue 46). The test reads the datagrams on a real
// unixgram socket, as systemd does.
func TestRestart_NotifiesSystemd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sockPath := dir + "/notify"
	nc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan string, 100)
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := nc.Read(buf)
			if err != nil {
				return
			}
			got <- string(buf[:n])
		}
	}()
	script := dir + "/env.sh"
	if err := os.WriteFile(script, []byte("#!/bin/sh\ncat >/dev/null\nenv > \"$1/env.tmp\"\nls /proc/$$/fd > \"$1/fds\"\nmv \"$1/env.tmp\" \"$1/env\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := writeConfig(t, dir, fmt.Sprintf("\n[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n\n[[destination]]\nname = \"cmd\"\ncommand = [%q, %q]\n\n[[route]]\nsource = \"gh\"\nto = [\"cmd\"]\n", script, dir))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := l.(*net.TCPListener)
	defer ln.Close()
	p := startActivated(t, ln, config, "NOTIFY_SOCKET="+sockPath, "WATCHDOG_USEC=1000000")

	ready := apptest.Recv(t, got, 30*time.Second, "the first notification")
	if !strings.Contains(ready, "READY=1") || !strings.Contains(ready, "STATUS=serving 1 sources on "+ln.Addr().String()) {
		t.Fatalf("first notification %q, want READY=1 with a STATUS= line", ready)
	}
	resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("/healthz once READY=1 came: %v %v", resp, err)
	}
	resp.Body.Close()
	// WatchdogSec=1s: a beat every half second, each after a probe commit.
	for range 2 {
		if beat := apptest.Recv(t, got, 10*time.Second, "WATCHDOG=1"); beat != "WATCHDOG=1" {
			t.Fatalf("notification %q, want WATCHDOG=1", beat)
		}
	}
	body := crashBody("env-1")
	if r := post(t, ln.Addr().String(), "gh", body, githubHeaders(body, e2eSecret, "env-1")); r.code != 200 {
		t.Fatalf("post: %d %v", r.code, r.body)
	}
	apptest.Until(t, 30*time.Second, func() error {
		_, err := os.Stat(dir + "/env")
		return err
	})
	env, _ := os.ReadFile(dir + "/env")
	for _, v := range []string{"LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES", "NOTIFY_SOCKET", "WATCHDOG_USEC"} {
		if strings.Contains(string(env), v+"=") {
			t.Errorf("the command destination inherited %s", v)
		}
	}
	if fds, _ := os.ReadFile(dir + "/fds"); slices.Contains(strings.Fields(string(fds)), "3") {
		t.Errorf("the command destination inherited fd 3: %s", fds)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	for {
		n := apptest.Recv(t, got, 30*time.Second, "STOPPING=1")
		if strings.HasPrefix(n, "STOPPING=1") {
			if !strings.Contains(n, "STATUS=draining") {
				t.Fatalf("stopping without a STATUS= line: %q", n)
			}
			break
		}
	}
	p.stop(t)
}
