package cli_test

// Hostile peers and operator slips around the operations of hookbox (issue
// 15, operations half), each run against the real binary with a ceiling on
// its peak memory (VmHWM): destinations that answer without end, a backup
// read slowly, a restore racing a start, the plain-HTTP listener.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
	"hookbox/storage/bboltstore"
)

// opsMemCeiling is the ceiling on the peak RSS of hookbox.
const opsMemCeiling = 256 << 20

// opsPeakRSS returns the peak resident set (VmHWM) of process pid.
func opsPeakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read VmHWM: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// opsCheckRSS fails the test when hookbox's peak RSS passed the ceiling,
// and logs it either way (the report quotes it).
func opsCheckRSS(t *testing.T, p *proc, what string) {
	t.Helper()
	peak := opsPeakRSS(t, p.cmd.Process.Pid)
	t.Logf("%s: peak RSS (VmHWM) of hookbox %.1f MB", what, float64(peak)/(1<<20))
	if peak > opsMemCeiling {
		t.Errorf("%s: peak RSS %d MB, over the %d MB ceiling", what, peak>>20, opsMemCeiling>>20)
	}
}

// opsAPI GETs path under /api/v1 with the e2e status login and decodes
// its JSON answer into v.
func opsAPI(t *testing.T, addr, path string, v any) {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/v1"+path, nil)
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("GET %s: %v in %s", path, err, raw)
	}
}

// opsAttempt is one attempt as the event API shows it.
type opsAttempt struct {
	N          int     `json:"n"`
	DurationMS float64 `json:"duration_ms"`
	Status     int     `json:"status"`
	Error      string  `json:"error"`
	Response   string  `json:"response"`
}

// opsDelivery waits until the delivery of event id has an attempt, and
// returns its state and attempts.
func opsDelivery(t *testing.T, addr, id string, limit time.Duration) (string, []opsAttempt) {
	t.Helper()
	var state string
	var history []opsAttempt
	apptest.Eventually(t, limit, "an attempt recorded for "+id, func() bool {
		var list struct {
			Items []struct {
				Seq uint64 `json:"seq"`
			} `json:"items"`
		}
		opsAPI(t, addr, "/events?id="+id, &list)
		if len(list.Items) != 1 {
			return false
		}
		var ev struct {
			Deliveries []struct {
				State   string       `json:"state"`
				History []opsAttempt `json:"attempts_detail"`
			} `json:"deliveries"`
		}
		opsAPI(t, addr, fmt.Sprintf("/events/%d", list.Items[0].Seq), &ev)
		if len(ev.Deliveries) != 1 || len(ev.Deliveries[0].History) == 0 {
			return false
		}
		state, history = ev.Deliveries[0].State, ev.Deliveries[0].History
		return true
	})
	return state, history
}

// hostileDestination serves one raw HTTP answer per connection: it reads
// the request, then calls answer with the connection; written counts what
// answer managed to write before hookbox hung up.
type hostileDestination struct {
	url     string
	written atomic.Int64
	done    chan struct{} // one value per answer that returned
}

func startHostileDestination(t *testing.T, answer func(w io.Writer, d *hostileDestination)) *hostileDestination {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &hostileDestination{url: "http://" + ln.Addr().String() + "/hook", done: make(chan struct{}, 16)}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				io.Copy(io.Discard, req.Body)
				answer(c, d)
				select {
				case d.done <- struct{}{}:
				default:
				}
			}()
		}
	}()
	return d
}

// stream writes zeros until the peer hangs up or limit bytes went out.
func (d *hostileDestination) stream(w io.Writer, limit int64, pause time.Duration, chunk int) {
	buf := make([]byte, chunk)
	for d.written.Load() < limit {
		n, err := w.Write(buf)
		d.written.Add(int64(n))
		if err != nil {
			return
		}
		if pause > 0 {
			time.Sleep(pause) // a destination that trickles: the time is what it tests
		}
	}
}

// A destination that declares a 4 GiB answer and streams it, one that
// streams without a length until the connection closes, and one that
// drips its answer a byte at a time: each attempt ends within the
// destination's timeout, with the status the destination gave, and
// hookbox's peak RSS stays under the ceiling.
func TestOps_HostileDestinationAnswers(t *testing.T) {
	const timeout = 5 * time.Second
	for _, tt := range []struct {
		name   string
		answer func(w io.Writer, d *hostileDestination)
		state  string
		status int
		// maxRead bounds what the destination could write before hookbox
		// hung up (socket buffers included); 0: not checked.
		maxRead int64
	}{
		{"DeclaredHuge200", func(w io.Writer, d *hostileDestination) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 4294967296\r\n\r\n")
			d.stream(w, 4<<30, 0, 64<<10)
		}, "delivered", 200, 64 << 20},
		{"DeclaredHuge500", func(w io.Writer, d *hostileDestination) {
			io.WriteString(w, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 4294967296\r\n\r\n")
			d.stream(w, 4<<30, 0, 64<<10)
		}, "pending", 500, 64 << 20},
		{"UntilClose", func(w io.Writer, d *hostileDestination) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
			d.stream(w, 4<<30, 0, 64<<10)
		}, "delivered", 200, 64 << 20},
		{"Drip", func(w io.Writer, d *hostileDestination) {
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
			d.stream(w, 100000, 20*time.Millisecond, 1)
		}, "delivered", 200, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dest := startHostileDestination(t, tt.answer)
			dir := t.TempDir()
			config := writeConfig(t, dir, fmt.Sprintf(`
[status]
password_env = "E2E_STATUS_PASSWORD"

[[destination]]
name = "hostile"
url = %q
timeout = "%s"
retry = ["1h"]

[[route]]
source = "gh"
to = ["hostile"]
`, dest.url, timeout))
			p := start(t, config)
			body := []byte(`{"zen":"answers"}`)
			start := time.Now()
			if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "hostile-1")); r.code != 200 {
				t.Fatalf("webhook: %d %v", r.code, r.body)
			}
			state, attempts := opsDelivery(t, p.addr, "hostile-1", 3*timeout)
			took := time.Since(start)
			a := attempts[0]
			t.Logf("%s: state %s, attempt status %d error %q, %d bytes kept, took %v (attempt %.0f ms); the destination wrote %d bytes",
				tt.name, state, a.Status, a.Error, len(a.Response), took, a.DurationMS, dest.written.Load())
			if state != tt.state || a.Status != tt.status {
				t.Errorf("state %s status %d; want %s %d", state, a.Status, tt.state, tt.status)
			}
			if len(a.Response) > 1024 {
				t.Errorf("kept %d bytes of the answer", len(a.Response))
			}
			if a.DurationMS > float64((timeout+time.Second)/time.Millisecond) {
				t.Errorf("the attempt took %.0f ms, past the %v timeout", a.DurationMS, timeout)
			}
			select {
			case <-dest.done: // hookbox hung up (or the answer ended)
			case <-time.After(timeout + 2*time.Second):
				t.Errorf("hookbox still reading after %d bytes", dest.written.Load())
			}
			if n := dest.written.Load(); tt.maxRead > 0 && n > tt.maxRead {
				t.Errorf("the destination wrote %d bytes before hookbox hung up", n)
			}
			opsCheckRSS(t, p, tt.name)
			p.stop(t)
		})
	}
}

// A restore started just before serve, and serve started just before a
// restore, many times with tight timing: either one refuses or they run
// one after the other, and an id acknowledged by the server that ran is
// a duplicate after a restart, never accepted again. (The server used to
// start on the data file the restore was replacing, accept events into it,
// and forget them at the next start.)
func TestOps_RestoreRacesServe(t *testing.T) {
	t.Parallel() // mostly waiting for processes: overlaps the other waiting tests
	dir := t.TempDir()
	config := writeConfig(t, dir, "[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n")
	dataFile := filepath.Join(dir, "data", "hookbox.db")
	p := start(t, config)
	body := []byte(`{"zen":"restore"}`)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "before-backup")); r.code != 200 {
		t.Fatalf("webhook: %d %v", r.code, r.body)
	}
	p.stop(t)
	backup := filepath.Join(dir, "backup.db")
	raw, err := os.ReadFile(dataFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(backup, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	outcomes := map[string]int{}
	finished := 0 // tries whose restore ended before its temporary file was seen
	// Restore first: serve starts once the restore has taken its lock and
	// is writing the copy (its temporary file appears), then a little
	// later; serve first: the restore starts a little after serve.
	type try struct {
		restoreFirst bool
		delay        time.Duration
	}
	var tries []try
	for _, d := range []time.Duration{0, 0, 1, 2, 4, 8, 16, 32} {
		tries = append(tries, try{true, d * time.Millisecond})
	}
	for _, d := range []time.Duration{0, 10, 50, 200} {
		tries = append(tries, try{false, d * time.Millisecond})
	}
	for i, tr := range tries {
		restore := exec.Command(clitest.Binary(t), "restore", "-config", config, backup)
		var restoreOut bytes.Buffer
		restore.Stdout, restore.Stderr = &restoreOut, &restoreOut
		var srv *proc
		var refused string
		ready := make(chan struct{})
		var restoreErr error
		restored := make(chan struct{}) // closed when the restore has exited
		startRestore := func() {
			if err := restore.Start(); err != nil {
				t.Fatal(err)
			}
			go func() { restoreErr = restore.Wait(); close(restored) }()
		}
		startServe := func() {
			go func() {
				srv, refused = launch(t, config, []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e"})
				close(ready)
			}()
		}
		first, second := startServe, startRestore
		if tr.restoreFirst {
			first, second = startRestore, startServe
		}
		first()
		if tr.restoreFirst && !opsWaitFile(t, filepath.Dir(dataFile), ".hookbox.db.restore-", restored) {
			finished++
		}
		time.Sleep(tr.delay) // the offset between the two: the race this test is about
		second()
		<-ready
		<-restored
		// Events acknowledged after the restore ended: the server must be
		// running on the file that is in place.
		var acked []string
		if srv != nil {
			for k := range 3 {
				id := fmt.Sprintf("race-%d-%d", i, k)
				if r := post(t, srv.addr, "gh", body, githubHeaders(body, e2eSecret, id)); r.code == 200 && r.body["status"] == "accepted" {
					acked = append(acked, id)
				}
			}
			srv.stop(t)
		}
		outcome := fmt.Sprintf("restore first=%v: restore %s, serve %s", tr.restoreFirst,
			map[bool]string{true: "done", false: "refused"}[restoreErr == nil], map[bool]string{true: "ran", false: "refused"}[srv != nil])
		outcomes[outcome]++
		if restoreErr != nil && !strings.Contains(restoreOut.String(), "locked") {
			t.Fatalf("try %d: restore failed for another reason than the lock: %v\n%s", i, restoreErr, restoreOut.String())
		}
		if srv == nil && !strings.Contains(refused, "locked") {
			t.Fatalf("try %d: serve refused for another reason than the lock:\n%s", i, refused)
		}
		if restoreErr != nil && srv == nil {
			t.Fatalf("try %d: both refused:\nrestore: %s\nserve: %s", i, restoreOut.String(), refused)
		}
		// The next start must know every acknowledged id.
		p := start(t, config)
		for _, id := range acked {
			if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, id)); r.body["status"] != "duplicate" {
				t.Errorf("try %d (%s, delay %v): %s was acknowledged, then accepted again after a restart: %d %v",
					i, outcome, tr.delay, id, r.code, r.body)
			}
		}
		p.stop(t)
	}
	for o, n := range outcomes {
		t.Logf("%2d× %s", n, o)
	}
	if finished > 0 {
		t.Logf("%d of the restore-first tries: the restore had ended before its temporary file was seen (a loaded machine), so serve started after it", finished)
	}
}

// opsWaitFile waits until a file whose name starts with prefix is in dir,
// and reports true; or until gone is closed (the process that writes it
// has ended), and reports false.
func opsWaitFile(t *testing.T, dir, prefix string, gone <-chan struct{}) bool {
	t.Helper()
	seen := false
	// Checked often: the restore's temporary file lasts only while it
	// writes, a few milliseconds, which a poll on a loaded machine can miss
	// (it did, under -parallel 4 beside the other waiting tests and a
	// benchmark); the writer's end is then what is waited for.
	apptest.UntilEvery(t, 30*time.Second, 200*time.Microsecond, func() error {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), prefix) {
				seen = true
				return nil
			}
		}
		select {
		case <-gone:
			return nil
		default:
		}
		return fmt.Errorf("no %s* in %s", prefix, dir)
	})
	return seen
}

// opsFillData writes n events of size bytes each into a new data file in
// dataDir, through the store as serve would.
func opsFillData(t *testing.T, dataDir string, n, size int) {
	t.Helper()
	db, err := bboltstore.Open(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	body := make([]byte, size) // random: events are stored compressed, and these must take their size
	rand.Read(body)
	now := time.Now()
	for i := range n {
		body[0] = byte(i) // no two alike
		e := &app.Event{Source: "gh", ID: fmt.Sprintf("fill-%d", i), Topic: "push", ReceivedAt: now, Body: body}
		if _, err := db.Accept(context.Background(), e, now.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
}

// A backup of a few hundred MB read by a client that takes well over the
// server's 10 s WriteTimeout: it arrives whole and sound, and the slow
// reader does not make hookbox keep the copy in memory.
func TestOps_SlowBackupReader(t *testing.T) {
	t.Parallel() // reads at a slow pace on purpose: overlaps the other waiting tests
	dir := t.TempDir()
	config := writeConfig(t, dir, "[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n")
	opsFillData(t, filepath.Join(dir, "data"), 300, 1<<20)
	// The shipped build: -race's shadow memory grows with what the
	// backup's copy reads and says nothing about the bound (580 MB under
	// -race, 185 MB without, since backups copy the live data key by key).
	p := startBinary(t, clitest.Shipped(t), config, []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e"})

	req, _ := http.NewRequest("GET", "http://"+p.addr+"/api/v1/backup", nil)
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength < 300<<20 {
		t.Fatalf("backup: %d, %d bytes", resp.StatusCode, resp.ContentLength)
	}
	// About 16 s for the whole copy: 64 KiB per 1/256 of the length.
	out := filepath.Join(t.TempDir(), "backup.db")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const chunk = 64 << 10
	pace := 16 * time.Second / time.Duration(resp.ContentLength/chunk)
	began := time.Now()
	buf := make([]byte, chunk)
	var got int64
	for i := 0; ; i++ {
		n, err := io.ReadFull(resp.Body, buf)
		f.Write(buf[:n])
		got += int64(n)
		if err == io.EOF || err == io.ErrUnexpectedEOF && got == resp.ContentLength {
			break
		}
		if err != nil {
			t.Fatalf("after %d of %d bytes and %v: %v", got, resp.ContentLength, time.Since(began).Round(time.Millisecond), err)
		}
		if wait := time.Until(began.Add(time.Duration(i+1) * pace)); wait > 0 {
			time.Sleep(wait) // a slow reader: the time is what this test is about
		}
	}
	took := time.Since(began)
	t.Logf("backup of %d MB read in %v", got>>20, took.Round(time.Millisecond))
	if got != resp.ContentLength {
		t.Fatalf("got %d of %d bytes", got, resp.ContentLength)
	}
	if took < 12*time.Second {
		t.Errorf("the read took only %v: not past the 10 s write timeout", took)
	}
	if err := bboltstore.CheckFile(out); err != nil {
		t.Errorf("the copy: %v", err)
	}
	opsCheckRSS(t, p, "slow backup reader")
	p.stop(t)
}

// `hookbox check` warns about a config readable by group or others that
// holds secrets inline (naming the keys, never the values), and about a
// data dir that is not 0700; a config whose secrets all come from the
// environment gets no warning. serve puts the data dir back to 0700 at
// start and says so.
func TestOps_UnsafeFileModes(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	inline := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q

[status]
password = "inline-pw-Secret-9z8y"

[[source]]
name = "gh"
provider = "github"
secret = "inline-gh-Secret-7x6w"

[[source]]
name = "env"
provider = "github"
secret_env = "E2E_GH_SECRET"
`, dataDir)
	fromEnv := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q

[status]
password_env = "E2E_STATUS_PASSWORD"

[[source]]
name = "gh"
provider = "github"
secret_env = "E2E_GH_SECRET"
`, dataDir)
	check := func(config string) (string, int) {
		stdout, stderr, code := hookbox(t, nil, "check", "-config", config)
		return stdout + stderr, code
	}
	config := filepath.Join(dir, "config.toml")
	for _, tt := range []struct {
		name string
		text string
		mode os.FileMode
		warn bool
	}{
		{"InlineWorldReadable", inline, 0o644, true},
		{"InlineGroupReadable", inline, 0o640, true},
		{"InlineOwnerOnly", inline, 0o600, false},
		{"EnvWorldReadable", fromEnv, 0o644, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			os.WriteFile(config, []byte(tt.text), 0o600)
			os.Chmod(config, tt.mode)
			t.Setenv("E2E_GH_SECRET", e2eSecret)
			t.Setenv("E2E_STATUS_PASSWORD", "pw-e2e")
			out, code := check(config)
			if code != 0 {
				t.Fatalf("check: exit %d\n%s", code, out)
			}
			warned := strings.Contains(out, "warning: "+config)
			if warned != tt.warn {
				t.Fatalf("check of a %04o config, warning %v; want %v:\n%s", tt.mode, warned, tt.warn, out)
			}
			if tt.warn && (!strings.Contains(out, "status.password") || !strings.Contains(out, "source[0] (gh).secret") ||
				strings.Contains(out, "source[1]") || !strings.Contains(out, fmt.Sprintf("%04o", tt.mode))) {
				t.Errorf("the warning does not name the inline keys and the mode:\n%s", out)
			}
			if strings.Contains(out, "Secret-") {
				t.Errorf("check printed a secret:\n%s", out)
			}
		})
	}

	os.WriteFile(config, []byte(fromEnv), 0o600)
	if err := os.Chmod(dataDir, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Setenv("E2E_GH_SECRET", e2eSecret)
	t.Setenv("E2E_STATUS_PASSWORD", "pw-e2e")
	if out, code := check(config); code != 0 || !strings.Contains(out, "warning: data dir "+dataDir) || !strings.Contains(out, "0777") {
		t.Fatalf("check with a data dir 0777: exit %d\n%s", code, out)
	}
	p := start(t, config)
	if fi, err := os.Stat(dataDir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("data dir after start: %v %v", fi.Mode(), err)
	}
	if log := p.logText(); !strings.Contains(log, "data dir mode") || !strings.Contains(log, "0777") {
		t.Errorf("serve did not say it fixed the data dir:\n%s", log)
	}
	p.stop(t)
	if out, _ := check(config); strings.Contains(out, "warning: data dir") { // (public_url unset is warned of too)
		t.Errorf("check after serve fixed the data dir:\n%s", out)
	}
}

// opsAlertSink collects the texts posted to an alerts.url.
type opsAlertSink struct {
	url   string
	mu    sync.Mutex
	texts []string
}

func startAlertSink(t *testing.T) *opsAlertSink {
	t.Helper()
	s := &opsAlertSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&m)
		s.mu.Lock()
		s.texts = append(s.texts, m.Text)
		s.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/alert"
	return s
}

// wait waits until an alert containing want arrived.
func (s *opsAlertSink) wait(t *testing.T, want string, limit time.Duration) string {
	t.Helper()
	var found string
	apptest.Until(t, limit, func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, text := range s.texts {
			if strings.Contains(text, want) {
				found = text
				return nil
			}
		}
		return fmt.Errorf("no alert with %q; got:\n%s", want, strings.Join(s.texts, "\n"))
	})
	return found
}

// ACME with certificates that live 45 seconds, then the CA taken off the
// network: the certificate near its expiry is alerted at once, the
// metric shows its remaining validity, and when the renewal fails the
// failure is logged (the failed request to the CA, and the certificate
// not renewed) and sent to alerts.url. (hookbox used to say nothing.)
func TestOps_CertificateTroubleIsReported(t *testing.T) {
	t.Parallel() // mostly waits for the renewal, 30 s after the issue
	httpPort, tlsPort := freePort(t), freePort(t)
	const validity = 45
	pebble := startPebbleValidity(t, httpPort, tlsPort, startDNS(t), validity)
	sink := startAlertSink(t)

	config := opsACMEConfig(t, httpPort, pebble.directory, sink.url, "[status]\nmetrics_public = true\n")
	p := startWith(t, config, pebble.env())
	waitLog(t, p, "certificate ready", 90*time.Second)
	issued := time.Now()
	t.Logf("expiry alert: %s", sink.wait(t, "expires in", 30*time.Second))

	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pebble.roots, ServerName: acmeDomain}}}
	resp, err := client.Get("https://" + p.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`(?m)^hookbox_certificate_expiry_seconds (\S+)$`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("no hookbox_certificate_expiry_seconds in /metrics:\n%s", raw)
	}
	if left, _ := strconv.ParseFloat(string(m[1]), 64); left <= 0 || left > validity {
		t.Errorf("hookbox_certificate_expiry_seconds = %s, want within (0, %d]", m[1], validity)
	}

	// The CA goes away; autocert's renewal, a third of the lifetime before
	// expiry, fails.
	pebble.stop()
	text := sink.wait(t, "has not been renewed", validity*time.Second)
	t.Logf("renewal alert %v after issue: %s", time.Since(issued).Round(time.Second), text)
	waitLog(t, p, "certificate not renewed", 10*time.Second)
	waitLog(t, p, "ACME request failed", 10*time.Second)
	if !strings.Contains(text, "Last error from the ACME CA: ") || strings.Contains(text, "none recorded") {
		t.Errorf("the renewal alert does not say what failed: %s", text)
	}
	opsCheckRSS(t, p, "certificate trouble")
	p.stop(t)
}

// The ACME CA unreachable from the start: the failure is logged and sent
// to alerts.url, and HTTPS handshakes that fail for want of a certificate
// are logged too (rate-limited), where they used to fail in silence.
func TestOps_CertificateUnobtainable(t *testing.T) {
	httpPort, tlsPort := freePort(t), freePort(t)
	pebble := startPebble(t, httpPort, tlsPort, startDNS(t))
	pebble.stop()
	t.Setenv("SSL_CERT_FILE", pebble.serverPEM)
	sink := startAlertSink(t)
	config := opsACMEConfig(t, httpPort, pebble.directory, sink.url, "")
	p := start(t, config)
	waitLog(t, p, "no certificate yet", 60*time.Second)
	t.Logf("alert: %s", sink.wait(t, "no certificate for "+acmeDomain, 30*time.Second))
	for range 3 {
		if c, err := tls.Dial("tcp", p.addr, &tls.Config{ServerName: acmeDomain, InsecureSkipVerify: true}); err == nil {
			c.Close()
			t.Fatal("a handshake succeeded without a certificate")
		}
	}
	waitLog(t, p, "TLS handshake without a certificate", 30*time.Second)
	if n := strings.Count(p.logText(), "TLS handshake without a certificate"); n != 1 {
		t.Errorf("%d log lines for 3 failed handshakes within a minute, want 1", n)
	}
	p.stop(t)
}

// opsACMEConfig writes a config in ACME mode for acmeDomain from the CA at
// directory, answering HTTP-01 on httpPort, with alerts to alertURL,
// followed by extra; it returns its path.
func opsACMEConfig(t *testing.T, httpPort int, directory, alertURL, extra string) string {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
http_listen = "127.0.0.1:%d"
domain = %q
acme_directory = %q
data_dir = %q

[alerts]
url = %q

[[source]]
name = "gh"
provider = "github"
secret_env = "E2E_GH_SECRET"

`, httpPort, acmeDomain, directory, filepath.Join(dir, "data"), alertURL) + extra
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return config
}
