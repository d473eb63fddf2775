package cli_test

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
	"hookbox/storage/bboltstore"
	"hookbox/storage/powercut"
)

// The power-loss tests run hookbox with its data on a file system that
// forgets, at a simulated power cut, every write not made durable with
// fsync (storage/powercut), where a kill -9 alone keeps everything the
// kernel was handed. They need root and /dev/fuse; they skip without, but
// fail under CI=true.
//
// powerCuts sets how many cuts TestPowerLoss_Acknowledged makes in each
// mode; a longer soak: go test -run TestPowerLoss -power.cuts 100 (or
// HOOKBOX_POWER_CUTS=100).
var powerCuts = flag.Int("power.cuts", 0, "power cuts per mode in TestPowerLoss_Acknowledged (default 10, or $HOOKBOX_POWER_CUTS)")

// brokenEnv names a deliberately broken build for the power-loss tests to
// run instead of the real one, to show that they catch it:
// HOOKBOX_POWERLOSS_BROKEN=nosync (bbolt's NoSync) or earlyack (the answer
// goes out before the commit's fsync). See storage/bboltstore/broken_off.go.
const brokenEnv = "HOOKBOX_POWERLOSS_BROKEN"

// syncLatency is what each fsync costs on the test file system, as on a
// disk: it keeps a commit's window between write and durability open
// long enough for a cut at a random moment to land in it.
const syncLatency = time.Millisecond

// powerDisk is a backing directory ("the disk") and the power-cut file
// system mounted over it, made again after each cut.
type powerDisk struct {
	t            *testing.T
	backing, mnt string
	fs           *powercut.FS
}

func newPowerDisk(t *testing.T) *powerDisk {
	t.Helper()
	powercut.Require(t)
	d := &powerDisk{t: t, backing: filepath.Join(t.TempDir(), "disk"), mnt: filepath.Join(t.TempDir(), "mnt")}
	for _, dir := range []string{d.backing, d.mnt} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if d.fs != nil {
			d.fs.Cut()
		}
	})
	return d
}

// mount mounts the file system over what the disk holds.
func (d *powerDisk) mount(opts powercut.Options) {
	d.t.Helper()
	fs, err := powercut.Mount(d.mnt, d.backing, opts)
	if err != nil {
		d.t.Fatal(err)
	}
	d.fs = fs
}

// cut cuts the power; the disk keeps what survived.
func (d *powerDisk) cut() powercut.CutReport {
	d.t.Helper()
	r, err := d.fs.Cut()
	d.fs = nil
	if err != nil {
		d.t.Fatalf("power cut: %v", err)
	}
	return r
}

// onDisk is path (relative to the mount) in the backing directory.
func (d *powerDisk) onDisk(path string) string { return filepath.Join(d.backing, path) }

// powerConfig writes writeConfig's config with data_dir at dataDir and
// extra, outside the mount (the operator's config is not under test).
func powerConfig(t *testing.T, dataDir string, extra ...string) string {
	t.Helper()
	path := writeConfig(t, t.TempDir(), extra...)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = regexp.MustCompile(`(?m)^data_dir = .*$`).ReplaceAll(b, []byte(fmt.Sprintf("data_dir = %q", dataDir)))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// powerBinary is the hookbox the power-loss tests run: the real one, or
// the broken build brokenEnv names, with the environment it needs.
func powerBinary(t *testing.T) (string, []string) {
	// GORACE: a race build otherwise waits a second before it exits.
	env := []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e", "GORACE=atexit_sleep_ms=0"}
	broken := os.Getenv(brokenEnv)
	if broken == "" {
		return clitest.Binary(t), env
	}
	tag := "broken_" + broken
	path := filepath.Join(t.TempDir(), "hookbox-"+broken)
	clitest.Build(t, path, "-tags", tag)
	t.Logf("running the deliberately broken build %s", tag)
	return path, append(env, "HOOKBOX_BROKEN_BUILD="+tag)
}

// kill kills hookbox with SIGKILL and reaps it.
func (p *proc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.cmd.Wait()
}

// boltCheck runs `hookbox restore -check` on the file at path: bbolt's
// consistency check, in a child process (it panics on some damage).
func boltCheck(t testing.TB, path string) error {
	cmd := exec.Command(clitest.Binary(t), "restore", "-check", path)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0") // a race build waits a second at exit otherwise
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("hookbox restore -check: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// resendAll sends ids again, concurrently, and returns those not
// answered "duplicate" (with their answers).
func resendAll(t *testing.T, addr string, ids []string) []string {
	t.Helper()
	var mu sync.Mutex
	var notDup []string
	var wg sync.WaitGroup
	next := make(chan string)
	client := &http.Client{Timeout: 10 * time.Second}
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range next {
				code, status, err := crashSend(client, addr, id)
				if err != nil || code != 200 || status != "duplicate" {
					mu.Lock()
					notDup = append(notDup, fmt.Sprintf("%s: %d %q %v", id, code, status, err))
					mu.Unlock()
				}
			}
		}()
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	client.CloseIdleConnections()
	return notDup
}

// Cut the power at random moments while senders post events and
// deliveries go out; after each cut hookbox starts on what the disk kept.
// Every acknowledged event must still be a duplicate when sent again,
// reach the sink, and the data file must pass bbolt's check.
func TestPowerLoss_Acknowledged(t *testing.T) {
	cuts := soakCount(t, 10, "HOOKBOX_POWER_CUTS", *powerCuts)
	exe, env := powerBinary(t)
	for _, mode := range []struct {
		name string
		torn bool
	}{{"LoseAll", false}, {"Torn", true}} {
		t.Run(mode.name, func(t *testing.T) {
			disk := newPowerDisk(t)
			sink := newFlakySink(t, 500) // half the attempts fail while the load runs
			retry := `["30ms"` + strings.Repeat(`, "30ms"`, 99) + `]`
			config := powerConfig(t, filepath.Join(disk.mnt, "data"), destinationConfig(sink.url, retry), "[backup]\nschedule = \"off\"\n")
			dataFile := disk.onDisk("data/" + bboltstore.FileName)
			ledger := &crashLedger{acked: map[string]bool{}, accepted: map[string]int{}}
			seed := rand.Uint64()
			var (
				cut            int
				verified, lost []string // acknowledged ids sent again after their cut, and those not stored
				fresh          []string // acknowledged since the last cut
				damaged        int      // cuts after which the data file failed bbolt's check
				delivered      = -1
			)
			start := time.Now()
			// The counts, also when a fatal failure ends the test early.
			defer func() {
				dupAccepted := 0
				for _, n := range ledger.accepted {
					dupAccepted += max(n-1, 0)
				}
				dlv := "not measured"
				if delivered >= 0 {
					dlv = strconv.Itoa(delivered)
				}
				t.Logf("%s (seed %d): %d cuts in %s: sent %d (%d re-sends of acknowledged ids); acknowledged %d, "+
					"stored %d and lost %d of the %d sent again after their cut, delivered %s, "+
					"accepted twice %d, data files failing bbolt's check %d; sink attempts %d (%d failed on purpose)",
					mode.name, seed, cut, time.Since(start).Round(time.Millisecond), ledger.sent, ledger.resends,
					len(ledger.acked), len(verified)-len(lost), len(lost), len(verified), dlv,
					dupAccepted, damaged, sink.attempts.Load(), sink.failed.Load())
			}()
			for cut < cuts {
				// Two cuts of three land at the start of a flush, when the
				// most is at stake: of the data file (events answered from
				// the intake log, their apply written and not yet durable:
				// the cut between the log's sync and its apply), or of the
				// intake log (a group written and not yet answered).
				var armed atomic.Bool
				flushOf := []string{"", "data/" + bboltstore.FileName, "data/hookbox.log."}[cut%3]
				atFlush := func(op powercut.Op) bool {
					return armed.Load() && op.Kind == "fsync" && strings.HasPrefix(op.Path, flushOf)
				}
				disk.mount(powercut.Options{Torn: mode.torn, Seed: seed + uint64(cut), SyncLatency: syncLatency, CutWhen: atFlush})
				p := startBinary(t, exe, config, env)
				if cut > 0 {
					bad := resendAll(t, p.addr, fresh)
					t.Logf("after cut %d: %d of the %d acknowledged before it are stored, %d lost", cut, len(fresh)-len(bad), len(fresh), len(bad))
					lost = append(lost, bad...)
					verified = append(verified, fresh...)
				}
				before := len(ledger.ackedList)
				stop := make(chan struct{})
				wg := ledger.load(p.addr, 6, fmt.Sprintf("%s%d", mode.name, cut), stop)
				ledger.waitSent(t, 10+rand.IntN(200))
				how := "at a random moment"
				if flushOf != "" {
					armed.Store(true)
					select {
					case <-disk.fs.Frozen():
						how = "at a flush of " + flushOf
					case <-time.After(200 * time.Millisecond): // a build that never flushes
					}
				}
				disk.fs.Freeze() // the power goes out: nothing hookbox does from now on is durable
				// Answers already sent reach their senders; then hookbox dies.
				// The senders stop, each once it has read the answer to its
				// request in flight (every write fails from the freeze on, so
				// what is not acknowledged yet is answered 503): the kill then
				// resets no connection with an answer unread.
				close(stop)
				wg.Wait()
				p.kill(t)
				r := disk.cut()
				cut++
				fresh = append([]string(nil), ledger.ackedList[before:]...)
				t.Logf("cut %d %s: %d acknowledged since the last cut; %v", cut, how, len(fresh), r)
				if err := boltCheck(t, dataFile); err != nil {
					t.Errorf("after cut %d: %v", cut, err)
					damaged++
				}
			}

			// The power stays on: the sink heals, senders retry what got no
			// answer, and everything acknowledged must reach it and still be
			// a duplicate.
			disk.mount(powercut.Options{SyncLatency: syncLatency})
			sink.failPermille.Store(0)
			p := startBinary(t, exe, config, env)
			bad := resendAll(t, p.addr, fresh)
			t.Logf("after cut %d: %d of the %d acknowledged before it are stored, %d lost", cut, len(fresh)-len(bad), len(fresh), len(bad))
			lost = append(lost, bad...)
			verified = append(verified, fresh...)
			ledger.resendUnanswered(t, p.addr)
			var missing []string
			apptest.Within(60*time.Second, func() bool { delivered, missing, _ = sink.counts(ledger.acked); return len(missing) == 0 })
			all := make([]string, 0, len(ledger.acked))
			for id := range ledger.acked {
				all = append(all, id)
			}
			forgotten := resendAll(t, p.addr, all)
			p.stop(t)
			if err := disk.fs.Unmount(); err != nil {
				t.Fatal(err)
			}
			disk.fs = nil
			if err := boltCheck(t, dataFile); err != nil {
				t.Errorf("after the last clean stop: %v", err)
			}

			if len(ledger.acked) == 0 {
				t.Fatal("the load acknowledged nothing")
			}
			if len(lost) > 0 {
				t.Errorf("%d acknowledged events were not stored after a cut (sent again, they were not duplicates), e.g. %v",
					len(lost), lost[:min(5, len(lost))])
			}
			if len(forgotten) > 0 {
				t.Errorf("%d acknowledged events are not duplicates at the end, e.g. %v", len(forgotten), forgotten[:min(5, len(forgotten))])
			}
			if len(missing) > 0 {
				t.Errorf("%d acknowledged events never reached the sink, e.g. %v", len(missing), missing[:min(5, len(missing))])
			}
			var twice []string
			for id, n := range ledger.accepted {
				if n > 1 {
					twice = append(twice, id)
				}
			}
			if len(twice) > 0 {
				t.Errorf("%d event ids were accepted more than once, e.g. %v", len(twice), twice[:min(5, len(twice))])
			}
			ledger.checkAnswers(t, sink)
		})
	}
}

// The data file made at the very first start survives a cut right after
// the first acknowledgement: its directory entry (and the data
// directory's own) must be synced, not only its pages.
func TestPowerLoss_FirstStart(t *testing.T) {
	exe, env := powerBinary(t)
	disk := newPowerDisk(t)
	config := powerConfig(t, filepath.Join(disk.mnt, "var", "lib", "hookbox"), "[backup]\nschedule = \"off\"\n")
	disk.mount(powercut.Options{})
	p := startBinary(t, exe, config, env)
	body := crashBody("first")
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "first")); r.code != 200 || r.body["status"] != "accepted" {
		t.Fatalf("first event: %d %v", r.code, r.body)
	}
	p.kill(t)
	t.Log(disk.cut())
	if err := boltCheck(t, disk.onDisk("var/lib/hookbox/"+bboltstore.FileName)); err != nil {
		t.Fatal(err)
	}

	disk.mount(powercut.Options{})
	p = startBinary(t, exe, config, env)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "first")); r.code != 200 || r.body["status"] != "duplicate" {
		t.Fatalf("the first acknowledged event after the cut: %d %v, want a duplicate", r.code, r.body)
	}
	p.stop(t)
}

// backupDoneRE finds the backups hookbox logged as done.
var backupDoneRE = regexp.MustCompile(`msg="backup done".* file=(\S+)`)

// Cut the power in the middle of scheduled backups (at a random file
// operation in the backup directory): every backup under its final name
// must be complete, and the newest one logged as done must be there.
func TestPowerLoss_Backup(t *testing.T) {
	exe, env := powerBinary(t)
	disk := newPowerDisk(t)
	config := powerConfig(t, filepath.Join(disk.mnt, "data"), `[backup]
schedule = "@every 1s"
keep = 2
`)
	ledger := &crashLedger{acked: map[string]bool{}, accepted: map[string]int{}}
	seed := rand.Uint64()
	const cuts = 6
	for cut := range cuts {
		var ops atomic.Int64
		var armed atomic.Bool // once hookbox is up: a cut before is not this test's
		at := 1 + rand.Int64N(40)
		inBackups := func(op powercut.Op) bool {
			return armed.Load() && strings.HasPrefix(op.Path, "data/backups") && ops.Add(1) == at
		}
		torn := cut%2 == 1
		disk.mount(powercut.Options{Torn: torn, Seed: seed + uint64(cut), SyncLatency: syncLatency, CutWhen: inBackups})
		p := startBinary(t, exe, config, env)
		armed.Store(true)
		stop := make(chan struct{})
		wg := ledger.load(p.addr, 2, fmt.Sprintf("backup%d", cut), stop)
		select {
		case <-disk.fs.Frozen():
		case <-time.After(30 * time.Second):
			t.Fatalf("no backup reached its operation %d in 30 s:\n%s", at, p.logText())
		}
		p.kill(t)
		close(stop)
		wg.Wait()
		var newest string
		for _, m := range backupDoneRE.FindAllStringSubmatch(p.logText(), -1) {
			newest = m[1]
		}
		r := disk.cut()

		ents, _ := os.ReadDir(disk.onDisk("data/backups"))
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
			if strings.HasPrefix(e.Name(), ".") {
				continue // a temporary file: the next backup removes it
			}
			if err := boltCheck(t, disk.onDisk("data/backups/"+e.Name())); err != nil {
				t.Errorf("cut %d (torn %v) at backup operation %d: %s is not a complete backup: %v", cut+1, torn, at, e.Name(), err)
			}
		}
		t.Logf("cut %d (torn %v) at backup operation %d: newest backup logged done %q; on the disk %v; %v",
			cut+1, torn, at, filepath.Base(newest), names, r)
		if newest != "" {
			if _, err := os.Stat(disk.onDisk(strings.TrimPrefix(newest, disk.mnt+"/"))); err != nil {
				t.Errorf("cut %d: the backup logged as done is gone: %v", cut+1, err)
			}
		}
		if err := boltCheck(t, disk.onDisk("data/"+bboltstore.FileName)); err != nil {
			t.Errorf("cut %d: the data file: %v", cut+1, err)
		}
	}
	// hookbox starts on what the last cut left.
	disk.mount(powercut.Options{})
	startBinary(t, exe, config, env).stop(t)
}

// Cut the power in the middle of `hookbox restore` (at a random file
// operation in the data directory, or after it returned): the data file
// is then the old one or the restored copy, whole, and hookbox starts on
// it; when restore said it was done, it is the copy.
func TestPowerLoss_Restore(t *testing.T) {
	exe, env := powerBinary(t)
	// Two backups, outside the mount, each remembering ids of its own.
	var backups [2]string
	var ids [2][]string
	for i := range backups {
		dir := t.TempDir()
		p := startBinary(t, exe, powerConfig(t, filepath.Join(dir, "data"), "[backup]\nschedule = \"off\"\n"), env)
		for k := range 5 {
			id := fmt.Sprintf("restore%d-%d", i, k)
			if code, status, err := crashSend(http.DefaultClient, p.addr, id); err != nil || status != "accepted" {
				t.Fatalf("%s: %d %q %v", id, code, status, err)
			}
			ids[i] = append(ids[i], id)
		}
		p.stop(t)
		backups[i] = filepath.Join(dir, "data", bboltstore.FileName)
	}
	disk := newPowerDisk(t)
	config := powerConfig(t, filepath.Join(disk.mnt, "data"), "[backup]\nschedule = \"off\"\n")
	restore := func(from string) ([]byte, error) {
		cmd := exec.Command(exe, "restore", "-config", config, from)
		cmd.Env = append(os.Environ(), env...)
		return cmd.CombinedOutput()
	}
	// A first restore, not cut, counts the operations of one.
	var total atomic.Int64
	disk.mount(powercut.Options{CutWhen: func(op powercut.Op) bool {
		if inDataDir(op) {
			total.Add(1)
		}
		return false
	}})
	if out, err := restore(backups[0]); err != nil {
		t.Fatalf("first restore: %v\n%s", err, out)
	}
	t.Logf("a restore makes %d operations in the data directory", total.Load())
	// It made the data directory: a cut right after it keeps both.
	disk.cut()
	if state, why := restoredSet(t, disk.onDisk("data/"+bboltstore.FileName), ids); state != 0 {
		t.Fatalf("a cut after the first restore (into a new data directory) returned: the data file is not the copy: %s", why)
	}
	current := 0
	seed := rand.Uint64()
	for cut := range 6 {
		next := 1 - current
		var ops atomic.Int64
		at := 1 + rand.Int64N(total.Load()*5/4) // a fifth of these after restore returned
		if cut%4 >= 2 {
			at = total.Load() - 5 + rand.Int64N(8) // between the copy's last write and the end
		}
		cutWhen := func(op powercut.Op) bool { return inDataDir(op) && ops.Add(1) == at }
		torn := cut%2 == 1
		disk.mount(powercut.Options{Torn: torn, Seed: seed + uint64(cut), SyncLatency: syncLatency, CutWhen: cutWhen})
		out, err := restore(backups[next])
		r := disk.cut()
		state, why := restoredSet(t, disk.onDisk("data/"+bboltstore.FileName), ids)
		t.Logf("cut %d (torn %v) at data directory operation %d: restore %v; data file: backup %d %s; %v",
			cut+1, torn, at, err, state, why, r)
		switch {
		case state < 0:
			t.Fatalf("cut %d: the data file is neither the old one nor the copy: %s\nrestore said:\n%s", cut+1, why, out)
		case err == nil && state != next:
			t.Fatalf("cut %d: restore said it was done, but the data file is the old one\n%s", cut+1, out)
		}
		disk.mount(powercut.Options{})
		startBinary(t, exe, config, env).stop(t)
		if err := disk.fs.Unmount(); err != nil {
			t.Fatal(err)
		}
		disk.fs = nil
		// The copies restore keeps are named to the second: clear them.
		old, _ := filepath.Glob(disk.onDisk("data/" + bboltstore.FileName + bboltstore.ReplacedSuffix + "*"))
		for _, f := range old {
			os.Remove(f)
		}
		current = state
	}
}

func inDataDir(op powercut.Op) bool { return op.Path == "data" || strings.HasPrefix(op.Path, "data/") }

// restoredSet tells which of the sets of ids the data file at path
// remembers: 0 or 1, or -1 (with the reason) when it is damaged, missing,
// or remembers parts of both.
func restoredSet(t *testing.T, path string, ids [2][]string) (int, string) {
	t.Helper()
	if err := boltCheck(t, path); err != nil {
		return -1, err.Error()
	}
	// Opened as hookbox opens it, on a copy: the check must not change the disk.
	dir := t.TempDir()
	b, err := os.ReadFile(path)
	if err != nil {
		return -1, err.Error()
	}
	if err := os.WriteFile(filepath.Join(dir, bboltstore.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(dir)
	if err != nil {
		return -1, err.Error()
	}
	defer db.Close()
	var found [2]int
	for i, set := range ids {
		for _, id := range set {
			if _, _, ok, err := db.LookupID(context.Background(), "gh", id); ok && err == nil {
				found[i]++
			}
		}
	}
	why := fmt.Sprintf("(remembers %d of backup 0's ids, %d of backup 1's)", found[0], found[1])
	switch {
	case found[0] == len(ids[0]) && found[1] == 0:
		return 0, why
	case found[1] == len(ids[1]) && found[0] == 0:
		return 1, why
	}
	return -1, why
}
