package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/storage/bboltstore"
)

// ackedEvent is an event hookbox answered "accepted", and when the answer came.
type ackedEvent struct {
	id string
	at time.Time
}

// ghLoad is a load of signed events on the gh source.
type ghLoad struct {
	mu    sync.Mutex
	acked []ackedEvent
	wg    sync.WaitGroup
}

// wait waits for the workers to end and returns what was accepted.
func (l *ghLoad) wait() []ackedEvent { l.wg.Wait(); return l.acked }

// waitAcked waits until n events were accepted at or after from.
func (l *ghLoad) waitAcked(t *testing.T, from time.Time, n int, within time.Duration) {
	t.Helper()
	apptest.Eventually(t, within, fmt.Sprintf("%d events accepted after %v", n, from), func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		k := 0
		for i := len(l.acked) - 1; i >= 0 && !l.acked[i].at.Before(from) && k < n; i-- {
			k++
		}
		return k >= n
	})
}

// loadGH posts signed events to the gh source from workers until stop is
// closed. Every answer must be 200 accepted.
func loadGH(t *testing.T, addr, prefix string, workers int, stop <-chan struct{}) *ghLoad {
	l := &ghLoad{}
	mu, wg := &l.mu, &l.wg
	client := &http.Client{Timeout: 10 * time.Second}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%s-%d-%d", prefix, w, i)
				body := []byte(fmt.Sprintf(`{"n": %d, "w": %d}`, i, w))
				req, _ := http.NewRequest("POST", "http://"+addr+"/in/gh", bytes.NewReader(body))
				for k, v := range githubHeaders(body, e2eSecret, id) {
					req.Header.Set(k, v)
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Errorf("post %s: %v", id, err)
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(raw), `"accepted"`) {
					t.Errorf("post %s: %d %s", id, resp.StatusCode, raw)
					return
				}
				mu.Lock()
				l.acked = append(l.acked, ackedEvent{id, time.Now()})
				mu.Unlock()
			}
		}()
	}
	return l
}

var backupNameRE = regexp.MustCompile(`^hookbox-\d{6,}-(\d{8}-\d{6})\.db$`)

// A scheduled backup taken under load restores into a working hookbox:
// every event accepted before the backup is there, its id is still a
// duplicate, and its delivery, pending when the backup was taken, goes out.
func TestBackupRestore_EndToEnd(t *testing.T) {
	t.Parallel() // mostly waits on 1 s backups and 1 s retries

	sink := newLedgerSink(t, 503) // the destination is down while the backups are taken
	dir := t.TempDir()
	backups := filepath.Join(dir, "backups")
	config := writeConfig(t, dir, destinationConfig(sink.url, `["1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s", "1s"]`),
		fmt.Sprintf("[backup]\nschedule = \"@every 1s\"\nkeep = 3\ndir = %q\n", backups))
	p := start(t, config)

	stop := make(chan struct{})
	loadStart := time.Now()
	load := loadGH(t, p.addr, "b", 4, stop)
	// Take the first backup started at least a second into the load.
	var chosen string
	var taken time.Time
	t.Cleanup(func() {
		select {
		case <-stop:
		default:
			close(stop) // the load ends before the test does, whatever failed
			load.wait()
		}
	})
	apptest.Eventually(t, 30*time.Second, "a backup in "+backups, func() bool {
		ents, _ := os.ReadDir(backups)
		for _, e := range ents {
			m := backupNameRE.FindStringSubmatch(e.Name())
			if m == nil {
				continue
			}
			at, _ := time.Parse("20060102-150405", m[1])
			if at.After(loadStart.Add(time.Second)) {
				// Copy it aside before keep = 3 prunes it.
				data, err := os.ReadFile(filepath.Join(backups, e.Name()))
				if err != nil {
					continue
				}
				chosen, taken = filepath.Join(t.TempDir(), e.Name()), at
				if err := os.WriteFile(chosen, data, 0o600); err != nil {
					t.Fatal(err)
				}
				return true
			}
		}
		return false
	})
	// The load goes on after the backup.
	load.waitAcked(t, taken.Add(time.Second), 20, 30*time.Second)
	close(stop)
	acked := load.wait()
	var before []string
	for _, a := range acked {
		if a.at.Before(taken) { // answered before the backup's transaction began
			before = append(before, a.id)
		}
	}
	if len(before) == 0 || len(before) == len(acked) {
		t.Fatalf("%d of %d events accepted before the backup at %s: the test needs some on each side", len(before), len(acked), taken)
	}
	t.Logf("%d events accepted, %d before the backup %s", len(acked), len(before), filepath.Base(chosen))

	// keep = 3: older backups were pruned while the schedule ran; two more
	// done after the chosen one were each a chance to prune.
	done := strings.Count(p.logText(), "backup done")
	apptest.Eventually(t, 30*time.Second, "two more backups", func() bool { return strings.Count(p.logText(), "backup done") >= done+2 })
	// Only finished backups count: the schedule may be writing the next
	// one's temporary file at this moment.
	ents, _ := os.ReadDir(backups)
	var kept []string
	for _, e := range ents {
		if backupNameRE.MatchString(e.Name()) {
			kept = append(kept, e.Name())
		}
	}
	if len(kept) > 3 {
		t.Errorf("keep = 3 but %d backups in %s: %v", len(kept), backups, kept)
	}

	// The status page shows the last backup.
	req, _ := http.NewRequest("GET", "http://"+p.addr+"/", nil)
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "Last backup:") {
		t.Errorf("the overview does not show the last backup:\n%s", page)
	}

	// restore refuses while hookbox holds the data file.
	began := time.Now()
	out, errOut, code := runCLI(t, "restore", "-config", config, chosen)
	if code != 1 || !strings.Contains(errOut, "locked by another process") || time.Since(began) > 10*time.Second {
		t.Fatalf("restore under a running hookbox: exit %d after %s\n%s%s", code, time.Since(began), out, errOut)
	}
	p.stop(t)

	out, errOut, code = runCLI(t, "restore", "-config", config, chosen)
	if code != 0 || !strings.Contains(out, "bbolt check passed") || !strings.Contains(out, ".replaced-") {
		t.Fatalf("restore: exit %d\n%s%s", code, out, errOut)
	}
	replaced := regexp.MustCompile(`kept as (\S+)`).FindStringSubmatch(out)
	if replaced == nil {
		t.Fatalf("restore does not say where the replaced file is:\n%s", out)
	}
	if fi, err := os.Stat(replaced[1]); err != nil || fi.Size() == 0 {
		t.Fatalf("the replaced data file: %v", err)
	}

	// The restored hookbox: ids remembered, pending deliveries go out.
	sink.code.Store(200)
	p = start(t, config)
	for _, id := range before {
		body := []byte("{}")
		if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, id)); r.code != 200 || r.body["status"] != "duplicate" {
			t.Fatalf("after restore, %s: %d %v; want duplicate", id, r.code, r.body)
		}
	}
	sink.waitDelivered(t, before, 60*time.Second)
	p.stop(t)
}

// A backup that cannot be written (its dir is under a regular file, which
// stops root too) sends one alert and ingest goes on answering.
func TestBackup_FailureAlertsIngestGoesOn(t *testing.T) {
	var mu sync.Mutex
	var alerts []string
	alertSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		alerts = append(alerts, m.Text)
		mu.Unlock()
	}))
	defer alertSrv.Close()
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	config := writeConfig(t, dir, fmt.Sprintf("[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n[backup]\nschedule = \"@every 1s\"\ndir = %q\n\n[alerts]\nurl = %q\n",
		filepath.Join(blocker, "backups"), alertSrv.URL))
	p := start(t, config)

	stop := make(chan struct{})
	load := loadGH(t, p.addr, "f", 2, stop)
	// Three failed runs at least, as the log says them, and the alert in.
	apptest.Until(t, 30*time.Second, func() error {
		mu.Lock()
		n := len(alerts)
		mu.Unlock()
		if n < 1 || strings.Count(p.logText(), "backup failed") < 3 {
			return fmt.Errorf("no three failed backups and an alert (%d alerts):\n%s", n, p.logText())
		}
		return nil
	})
	close(stop)
	acked := load.wait()
	if len(acked) == 0 {
		t.Fatal("nothing was accepted while backups failed")
	}
	mu.Lock()
	got := append([]string(nil), alerts...)
	mu.Unlock()
	if len(got) != 1 || !strings.Contains(got[0], "backup failed") {
		t.Errorf("alerts = %q; want one about the failed backup", got)
	}
	req, _ := http.NewRequest("GET", "http://"+p.addr+"/", nil)
	req.SetBasicAuth("admin", "pw-e2e")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "No backup yet.") || !strings.Contains(string(page), "The latest backup failed") {
		t.Errorf("the overview does not show the failing backups:\n%s", page)
	}
	if n := strings.Count(p.logText(), "backup failed"); n < 2 {
		t.Errorf("%d failed backups logged; want 2 at least:\n%s", n, p.logText())
	}
	p.stop(t)
}

// restore refuses a damaged copy with a message, even where bbolt's own
// check would crash on it, and changes nothing.
func TestRestore_DamagedCopy(t *testing.T) {
	dir := t.TempDir()
	config := writeConfig(t, dir)
	p := start(t, config)
	body := []byte("{}")
	post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "keep-me"))
	p.stop(t)
	dataFile := filepath.Join(dir, "data", bboltstore.FileName)
	before, err := os.ReadFile(dataFile)
	if err != nil {
		t.Fatal(err)
	}
	damaged := append([]byte(nil), before...)
	for i := 2 * 4096; i+64 < len(damaged); i += 4096 { // every page after the two metas
		for j := 16; j < 64; j++ {
			damaged[i+j] ^= 0x5a
		}
	}
	for name, data := range map[string][]byte{"damaged.db": damaged, "text.db": []byte("not a database\n")} {
		bad := filepath.Join(t.TempDir(), name)
		os.WriteFile(bad, data, 0o600)
		out, errOut, code := runCLI(t, "restore", "-config", config, bad)
		if code != 1 || !strings.Contains(errOut, "nothing was changed") || strings.Contains(errOut, "goroutine") {
			t.Errorf("restore of %s: exit %d\n%s%s", name, code, out, errOut)
		}
	}
	after, _ := os.ReadFile(dataFile)
	if !bytes.Equal(before, after) {
		t.Error("a refused restore changed the data file")
	}
	if matches, _ := filepath.Glob(dataFile + ".replaced-*"); len(matches) > 0 {
		t.Errorf("a refused restore left %v", matches)
	}
}
