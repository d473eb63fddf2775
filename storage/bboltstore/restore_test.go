package bboltstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/storage/bboltstore"
)

// A backup written while writers commit is a consistent copy; ingest goes
// on during it.
func TestDB_WriteBackup_UnderLoad(t *testing.T) {
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	acceptMany(t, db, "shop", 2000, t0.Add(time.Hour))

	var during atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := db.Accept(context.Background(), newEvent("load", "l-"+strings.Repeat("x", i%7)+time.Now().String(), t0), t0.Add(time.Hour), nil); err != nil {
				t.Error(err)
				return
			}
			during.Add(1)
		}
	}()
	out := filepath.Join(t.TempDir(), "copy.db")
	n, err := db.WriteBackup(context.Background(), out)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Size() != n {
		t.Fatalf("copy: %v, %d bytes reported", err, n)
	}
	if err := bboltstore.CheckFile(out); err != nil {
		t.Fatal(err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("leftover files next to the copy: %v", ents)
	}
	copyDB := mustOpenDir(t, restoreInto(t, out))
	if exp, _, ok, _ := copyDB.LookupID(context.Background(), "shop", "evt_2000"); !ok || exp.IsZero() {
		t.Error("the copy lacks an id accepted before the backup")
	}
	t.Logf("%d events accepted while the backup ran", during.Load())

	// A cancelled backup leaves nothing behind.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := db.WriteBackup(ctx, filepath.Join(filepath.Dir(out), "cancelled.db")); err == nil || !strings.Contains(err.Error(), context.Canceled.Error()) { // bbolt wraps it with %s
		t.Errorf("cancelled backup: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("a cancelled backup left files: %v", ents)
	}
}

// restoreInto restores from into a new data directory and returns it.
func restoreInto(t *testing.T, from string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	res, err := bboltstore.Restore(dir, from, t0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replaced != "" {
		t.Errorf("a restore into an empty dir replaced %s", res.Replaced)
	}
	return dir
}

func TestRestore(t *testing.T) {
	src := t.TempDir()
	db := mustOpenDir(t, src)
	acceptMany(t, db, "shop", 10, t0.Add(time.Hour))
	backup := filepath.Join(t.TempDir(), "hookbox-backup.db")
	if _, err := db.WriteBackup(context.Background(), backup); err != nil {
		t.Fatal(err)
	}

	t.Run("OK", func(t *testing.T) {
		dir := t.TempDir()
		old := mustOpenDir(t, dir)
		acceptMany(t, old, "other", 3, t0.Add(time.Hour))
		old.Close()
		before, _ := os.ReadFile(filepath.Join(dir, bboltstore.FileName))

		res, err := bboltstore.Restore(dir, backup, t0)
		if err != nil {
			t.Fatal(err)
		}
		if want := filepath.Join(dir, bboltstore.FileName+".replaced-20261129-120000"); res.Replaced != want {
			t.Errorf("replaced kept as %q, want %q", res.Replaced, want)
		}
		if kept, _ := os.ReadFile(res.Replaced); string(kept) != string(before) {
			t.Error("the replaced file was not kept as it was")
		}
		fi, err := os.Stat(res.Path)
		if err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != res.Size {
			t.Fatalf("restored file: %v %v", fi, err)
		}
		restored := mustOpenDir(t, dir)
		if ids, events, _ := restored.Counts(context.Background()); ids != 10 || events != 10 {
			t.Errorf("restored: %d ids, %d events; want 10, 10", ids, events)
		}
		if _, _, ok, _ := restored.LookupID(context.Background(), "other", "evt_1"); ok {
			t.Error("the restored file still has the replaced file's ids")
		}
		if dup, err := restored.Accept(context.Background(), newEvent("shop", "evt_3", t0), t0.Add(time.Hour), nil); err != nil || !dup {
			t.Errorf("a remembered id after restore: duplicate %v, %v", dup, err)
		}
	})
	t.Run("ErrLocked", func(t *testing.T) {
		dir := t.TempDir()
		running := mustOpenDir(t, dir)
		start := time.Now()
		_, err := bboltstore.Restore(dir, backup, t0)
		if !errors.Is(err, bboltstore.ErrLocked) || time.Since(start) > 5*time.Second {
			t.Fatalf("restore under a running hookbox: %v after %s", err, time.Since(start))
		}
		if ents := dataDirFiles(t, dir); len(ents) != 4 { // the data file, its marker and the intake log's two files
			t.Errorf("a refused restore changed the data dir: %v", ents)
		}
		if err := running.Ping(context.Background()); err != nil {
			t.Error(err)
		}
	})
	t.Run("DamagedCopy", func(t *testing.T) {
		dir := t.TempDir()
		mustOpenDir(t, dir).Close()
		before, _ := os.ReadFile(filepath.Join(dir, bboltstore.FileName))
		// Page damage can make bbolt's check panic in its own goroutine:
		// `hookbox restore` checks in a child process (see
		// app/cli/restore_test.go); here, files that fail without a panic.
		other := filepath.Join(t.TempDir(), "other.db")
		ob, err := bolt.Open(other, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		ob.Close()
		notBolt := filepath.Join(t.TempDir(), "notes.txt")
		os.WriteFile(notBolt, []byte("not a database"), 0o600)
		for _, from := range []string{other, notBolt, filepath.Join(dir, "missing.db")} {
			if _, err := bboltstore.Restore(dir, from, t0); err == nil || !strings.Contains(err.Error(), "nothing was changed") {
				t.Errorf("restore of %s: %v", filepath.Base(from), err)
			}
		}
		ents := dataDirFiles(t, dir)
		after, _ := os.ReadFile(filepath.Join(dir, bboltstore.FileName))
		if len(ents) != 4 || string(after) != string(before) { // the data file, its marker and the intake log's two files
			t.Errorf("a refused restore changed the data dir: %v", ents)
		}
	})
	t.Run("TwiceInOneSecond", func(t *testing.T) {
		dir := t.TempDir()
		mustOpenDir(t, dir).Close()
		var kept []string
		for range 3 {
			res, err := bboltstore.Restore(dir, backup, t0)
			if err != nil {
				t.Fatal(err)
			}
			kept = append(kept, filepath.Base(res.Replaced))
		}
		want := []string{"hookbox.db.replaced-20261129-120000", "hookbox.db.replaced-20261129-120000-2", "hookbox.db.replaced-20261129-120000-3"}
		if strings.Join(kept, " ") != strings.Join(want, " ") {
			t.Errorf("replaced files kept as %q, want %q", kept, want)
		}
	})
	t.Run("ItsOwnDataFile", func(t *testing.T) {
		dir := t.TempDir()
		mustOpenDir(t, dir).Close()
		if _, err := bboltstore.Restore(dir, filepath.Join(dir, bboltstore.FileName), t0); err == nil {
			t.Fatal("restoring the data file onto itself succeeded")
		}
	})
}

// dataDirFiles lists dir without the lock file, which serve and restore
// create and never remove.
func dataDirFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if e.Name() != bboltstore.LockName {
			names = append(names, e.Name())
		}
	}
	return names
}
