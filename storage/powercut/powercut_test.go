package powercut_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/storage/powercut"
)

// mount mounts a power-cut file system over a new backing directory (or
// backing, when given) and unmounts it at the end of the test if it is
// still mounted. It skips when FUSE cannot be used, except under CI=true.
func mount(t *testing.T, opts powercut.Options, backing ...string) (fsys *powercut.FS, mnt, disk string) {
	t.Helper()
	powercut.Require(t)
	disk = filepath.Join(t.TempDir(), "disk")
	if len(backing) > 0 {
		disk = backing[0]
	} else if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	mnt = filepath.Join(t.TempDir(), "mnt")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	fsys, err := powercut.Mount(mnt, disk, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Unmount() })
	return fsys, mnt, disk
}

// put writes data to path, truncating it, and fsyncs it when sync is set.
func put(t *testing.T, path string, data []byte, sync bool) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if sync {
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func cut(t *testing.T, fsys *powercut.FS) powercut.CutReport {
	t.Helper()
	r, err := fsys.Cut()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// content returns the file at path, or "<absent>".
func content(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "<absent>"
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFS_FileData(t *testing.T) {
	for _, tt := range []struct {
		name string
		sync bool
		want string
	}{
		{"UnsyncedWriteLost", false, "old"},
		{"SyncedWriteKept", true, "new contents"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fsys, mnt, disk := mount(t, powercut.Options{})
			put(t, filepath.Join(mnt, "f"), []byte("old"), true)
			syncDir(t, mnt)
			put(t, filepath.Join(mnt, "f"), []byte("new contents"), tt.sync)
			if got := content(t, filepath.Join(mnt, "f")); got != "new contents" {
				t.Fatalf("read through the mount before the cut: %q", got)
			}
			cut(t, fsys)
			if got := content(t, filepath.Join(disk, "f")); got != tt.want {
				t.Fatalf("after the cut: %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFS_DirectoryEntries(t *testing.T) {
	for _, tt := range []struct {
		name    string
		dirSync bool
		do      func(t *testing.T, mnt string)
		want    map[string]string
	}{
		{"CreateWithoutDirSyncLost", false, func(t *testing.T, mnt string) {
			put(t, filepath.Join(mnt, "new"), []byte("synced data"), true)
		}, map[string]string{"new": "<absent>", "old": "old"}},
		{"CreateWithDirSyncKept", true, func(t *testing.T, mnt string) {
			put(t, filepath.Join(mnt, "new"), []byte("synced data"), true)
		}, map[string]string{"new": "synced data", "old": "old"}},
		{"RenameWithoutDirSyncLost", false, func(t *testing.T, mnt string) {
			put(t, filepath.Join(mnt, "tmp"), []byte("replacement"), true)
			syncDir(t, mnt)
			rename(t, filepath.Join(mnt, "tmp"), filepath.Join(mnt, "old"))
		}, map[string]string{"tmp": "replacement", "old": "old"}},
		{"RenameWithDirSyncKept", true, func(t *testing.T, mnt string) {
			put(t, filepath.Join(mnt, "tmp"), []byte("replacement"), true)
			syncDir(t, mnt)
			rename(t, filepath.Join(mnt, "tmp"), filepath.Join(mnt, "old"))
		}, map[string]string{"tmp": "<absent>", "old": "replacement"}},
		{"UnlinkWithoutDirSyncLost", false, func(t *testing.T, mnt string) {
			if err := os.Remove(filepath.Join(mnt, "old")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"old": "old"}},
		{"UnlinkWithDirSyncKept", true, func(t *testing.T, mnt string) {
			if err := os.Remove(filepath.Join(mnt, "old")); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{"old": "<absent>"}},
		{"HardLinkThenRenameKept", true, func(t *testing.T, mnt string) {
			// What a restore does: a second name for the old file, the
			// new one renamed over the first.
			put(t, filepath.Join(mnt, "tmp"), []byte("restored"), true)
			if err := os.Link(filepath.Join(mnt, "old"), filepath.Join(mnt, "kept")); err != nil {
				t.Fatal(err)
			}
			rename(t, filepath.Join(mnt, "tmp"), filepath.Join(mnt, "old"))
		}, map[string]string{"old": "restored", "kept": "old", "tmp": "<absent>"}},
		{"SubdirectoryNeedsItsParentSynced", false, func(t *testing.T, mnt string) {
			if err := os.Mkdir(filepath.Join(mnt, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			put(t, filepath.Join(mnt, "sub", "f"), []byte("synced data"), true)
			syncDir(t, filepath.Join(mnt, "sub"))
		}, map[string]string{"sub/f": "<absent>"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fsys, mnt, disk := mount(t, powercut.Options{})
			put(t, filepath.Join(mnt, "old"), []byte("old"), true)
			syncDir(t, mnt)
			tt.do(t, mnt)
			if tt.dirSync {
				syncDir(t, mnt)
			}
			cut(t, fsys)
			for name, want := range tt.want {
				if got := content(t, filepath.Join(disk, name)); got != want {
					t.Errorf("%s after the cut: %q, want %q", name, got, want)
				}
			}
		})
	}
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

// A torn cut keeps some unsynced pages and loses others, whole pages each.
func TestFS_TornLosesSubset(t *testing.T) {
	const pages = 64
	fsys, mnt, disk := mount(t, powercut.Options{Torn: true, Seed: 7})
	path := filepath.Join(mnt, "f")
	put(t, path, bytes.Repeat([]byte("A"), pages*4096), true)
	syncDir(t, mnt)
	put(t, path, bytes.Repeat([]byte("B"), pages*4096), false)
	r := cut(t, fsys)
	t.Log(r)
	got := []byte(content(t, filepath.Join(disk, "f")))
	if len(got) != pages*4096 {
		t.Fatalf("size %d, want %d", len(got), pages*4096)
	}
	var kept int
	for i := range pages {
		pg := got[i*4096 : (i+1)*4096]
		switch {
		case bytes.Equal(pg, bytes.Repeat([]byte("B"), 4096)):
			kept++
		case !bytes.Equal(pg, bytes.Repeat([]byte("A"), 4096)):
			t.Fatalf("page %d is neither the old nor the new page", i)
		}
	}
	t.Logf("%d of %d unsynced pages kept", kept, pages)
	if kept == 0 || kept == pages {
		t.Fatalf("%d of %d unsynced pages kept: a torn cut keeps a subset", kept, pages)
	}
	if r.DirtyPages != pages || r.KeptPages != kept {
		t.Fatalf("report %v, want %d dirty pages and %d kept", r, pages, kept)
	}
}

// A torn cut applies a prefix of a directory's unsynced changes: a
// rename is all or nothing.
func TestFS_TornDirectoryKeepsAPrefix(t *testing.T) {
	seen := map[string]bool{}
	for seed := range uint64(16) {
		fsys, mnt, disk := mount(t, powercut.Options{Torn: true, Seed: seed})
		put(t, filepath.Join(mnt, "old"), []byte("old"), true)
		syncDir(t, mnt)
		put(t, filepath.Join(mnt, "tmp"), []byte("new"), true)
		rename(t, filepath.Join(mnt, "tmp"), filepath.Join(mnt, "old"))
		cut(t, fsys)
		state := content(t, filepath.Join(disk, "old")) + "," + content(t, filepath.Join(disk, "tmp"))
		switch state {
		case "old,<absent>", "old,new", "new,<absent>":
			seen[state] = true
		default:
			t.Fatalf("seed %d: old,tmp = %s: not a prefix of create, rename", seed, state)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("16 torn cuts gave only %v", seen)
	}
}

// The mount made again on the backing directory shows what survived,
// and a clean unmount keeps everything.
func TestFS_MountAgain(t *testing.T) {
	fsys, mnt, disk := mount(t, powercut.Options{})
	if err := os.Mkdir(filepath.Join(mnt, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	put(t, filepath.Join(mnt, "d", "f"), []byte("kept"), true)
	syncDir(t, filepath.Join(mnt, "d"))
	syncDir(t, mnt)
	put(t, filepath.Join(mnt, "d", "g"), []byte("lost"), true)
	cut(t, fsys)

	fsys, mnt, _ = mount(t, powercut.Options{}, disk)
	if got := content(t, filepath.Join(mnt, "d", "f")); got != "kept" {
		t.Fatalf("d/f on the new mount: %q", got)
	}
	if got := content(t, filepath.Join(mnt, "d", "g")); got != "<absent>" {
		t.Fatalf("d/g on the new mount: %q", got)
	}
	put(t, filepath.Join(mnt, "d", "h"), []byte("unsynced, then unmounted"), false)
	if err := fsys.Unmount(); err != nil {
		t.Fatal(err)
	}
	if got := content(t, filepath.Join(disk, "d", "h")); got != "unsynced, then unmounted" {
		t.Fatalf("d/h after a clean unmount: %q", got)
	}
}

// CutWhen cuts the power at an operation: it and all later ones fail.
func TestFS_CutWhen(t *testing.T) {
	writes := 0
	fsys, mnt, disk := mount(t, powercut.Options{CutWhen: func(op powercut.Op) bool {
		if op.Kind == "write" && op.Path == "f" {
			writes++
		}
		return writes == 3
	}})
	f, err := os.Create(filepath.Join(mnt, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 2 {
		if _, err := f.Write([]byte{'a' + byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	f.Sync()
	syncDir(t, mnt)
	if _, err := f.Write([]byte("c")); !errors.Is(err, syscall.EIO) {
		t.Fatalf("third write: %v, want EIO", err)
	}
	select {
	case <-fsys.Frozen():
	default:
		t.Fatal("Frozen is not closed")
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync after the cut: %v, want EIO", err)
	}
	f.Close()
	cut(t, fsys)
	if got := content(t, filepath.Join(disk, "f")); got != "ab" {
		t.Fatalf("after the cut: %q, want ab", got)
	}
}

// bbolt works on the mount (mmap reads see its unsynced writes), keeps
// every commit across a cut, and loses them with NoSync.
func TestFS_Bolt(t *testing.T) {
	for _, tt := range []struct {
		name   string
		noSync bool
	}{{"Sync", false}, {"NoSync", true}} {
		t.Run(tt.name, func(t *testing.T) {
			fsys, mnt, disk := mount(t, powercut.Options{})
			path := filepath.Join(mnt, "bolt.db")
			// The file and its entry are made durable first, so that only
			// the commits are at stake.
			put(t, path, nil, true)
			syncDir(t, mnt)
			const commits = 200
			cmd := exec.Command(os.Args[0], "-test.run=^TestBoltChild$")
			cmd.Env = append(os.Environ(), "POWERCUT_BOLT_CHILD="+path, "POWERCUT_BOLT_COMMITS="+strconv.Itoa(commits),
				"POWERCUT_BOLT_NOSYNC="+strconv.FormatBool(tt.noSync))
			if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
				t.Fatalf("bbolt on the mount: %v\n%s", err, out)
			}
			r := cut(t, fsys)
			t.Log(r)
			n, err := boltCount(filepath.Join(disk, "bolt.db"))
			t.Logf("commits on the disk after the cut: %d of %d (err %v)", n, commits, err)
			switch {
			case !tt.noSync && (err != nil || n != commits):
				t.Fatalf("a synced bbolt lost commits: %d of %d, %v", n, commits, err)
			case tt.noSync && err == nil && n == commits:
				t.Fatal("bbolt with NoSync kept every commit across the cut: the file system did not forget")
			}
		})
	}
}

// bbolt reads back every commit through its mmap while copies of the
// file are taken (a read transaction and another descriptor, as hookbox's
// backups do) and written to the mount. With the kernel left to
// invalidate its page cache on its own, bbolt read zeros here.
func TestFS_BoltWhileCopied(t *testing.T) {
	for round := range 4 {
		_, mnt, _ := mount(t, powercut.Options{SyncLatency: time.Millisecond})
		cmd := exec.Command(os.Args[0], "-test.run=^TestBoltChild$")
		cmd.Env = append(os.Environ(), "POWERCUT_BOLT_CHILD="+filepath.Join(mnt, "bolt.db"), "POWERCUT_BOLT_COMMITS=300",
			"POWERCUT_BOLT_COPIES=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
			t.Fatalf("round %d: bbolt on the mount: %v\n%s", round, err, out[:min(len(out), 4000)])
		}
	}
}

// boltCount checks the bbolt file at path and counts its keys.
func boltCount(path string) (int, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		return 0, err
	}
	defer db.Close()
	n := 0
	err = db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		if b := tx.Bucket([]byte("b")); b != nil {
			n = b.Stats().KeyN
		}
		return nil
	})
	return n, err
}

// TestBoltChild runs only as TestFS_Bolt's child: bbolt on the mount,
// in a process of its own (see the package comment on mmap).
func TestBoltChild(t *testing.T) {
	path := os.Getenv("POWERCUT_BOLT_CHILD")
	if path == "" {
		t.Skip("runs as TestFS_Bolt's child")
	}
	commits, _ := strconv.Atoi(os.Getenv("POWERCUT_BOLT_COMMITS"))
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, InitialMmapSize: 1 << 30,
		NoSync: os.Getenv("POWERCUT_BOLT_NOSYNC") == "true"})
	if err != nil {
		t.Fatal(err)
	}
	stop, copied := make(chan struct{}), make(chan error, 1)
	size := 3000
	if os.Getenv("POWERCUT_BOLT_COPIES") != "" {
		size = 1000 // more commits per page: more writes to pages the copies read
		go func() { copied <- copyBolt(db, filepath.Join(filepath.Dir(path), "copy.db"), stop) }()
	} else {
		copied <- nil
	}
	for i := range commits {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			if v := b.Get([]byte(fmt.Sprintf("k%05d", i-1))); i > 0 && (len(v) != size || v[0] != byte(i-1)) {
				return fmt.Errorf("k%05d reads back %d bytes", i-1, len(v))
			}
			return b.Put([]byte(fmt.Sprintf("k%05d", i)), bytes.Repeat([]byte{byte(i)}, size))
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	if err := <-copied; err != nil {
		t.Fatal(err)
	}
	// Every commit reads back through the mmap.
	if err := db.View(func(tx *bolt.Tx) error {
		for i := range commits {
			if v := tx.Bucket([]byte("b")).Get([]byte(fmt.Sprintf("k%05d", i))); len(v) != size || v[0] != byte(i) {
				return fmt.Errorf("k%05d reads back %d bytes", i, len(v))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Closing syncs nothing more.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyBolt copies db to path on and on, as a backup does (temp file,
// fsync, rename), until stop is closed.
func copyBolt(db *bolt.DB, path string, stop <-chan struct{}) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		f, err := os.CreateTemp(filepath.Dir(path), ".copy-*")
		if err != nil {
			return err
		}
		err = db.View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(f); return err })
		if err == nil {
			err = f.Sync()
		}
		f.Close()
		if err == nil {
			err = os.Rename(f.Name(), path)
		}
		if err != nil {
			return err
		}
		select { // a backup every few milliseconds, not back to back
		case <-stop:
			return nil
		case <-time.After(5 * time.Millisecond):
		}
	}
}
