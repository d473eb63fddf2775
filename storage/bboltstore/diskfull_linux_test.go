//go:build linux

package bboltstore_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"hookbox/storage/bboltstore"
)

// MountTmpfs mounts a tmpfs of size bytes on a new temp dir and unmounts it
// at the end; it skips the test where mounting is not allowed (not root,
// no CAP_SYS_ADMIN).
func MountTmpfs(tb testing.TB, size int) string {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skip("mounting a tmpfs needs root")
	}
	dir := tb.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		tb.Skipf("cannot mount a tmpfs: %v", err)
	}
	tb.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			tb.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes zeros to path until the file system is full.
func Fill(tb testing.TB, path string) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	zeros := make([]byte, 64<<10)
	for {
		if _, err := f.Write(zeros); err != nil {
			return // ENOSPC: full
		}
	}
}

// The disk fills up under ingest: writes fail with an error (never a
// false success), what was acknowledged stays readable, the file stays
// consistent, and ingest works again once space is freed.
func TestDB_DiskFull(t *testing.T) {
	mnt := MountTmpfs(t, 4<<20)
	ctx := context.Background()
	dir := filepath.Join(mnt, "data")
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	// Leave some room, then use it up with events.
	filler := filepath.Join(mnt, "filler")
	Fill(t, filler)
	if err := os.Truncate(filler, 3<<20); err != nil {
		t.Fatal(err)
	}

	// Eight writers, so that failed commits carry groups of writes.
	body := bytes.Repeat([]byte("b"), 8<<10)
	var mu sync.Mutex
	var acked, failed []string
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 2000; i++ {
				e := newEvent("shop", fmt.Sprintf("full-%d-%d", w, i), t0)
				e.Body = body
				dup, err := db.Accept(ctx, e, t0.Add(time.Hour), nil)
				mu.Lock()
				switch {
				case err != nil:
					failed = append(failed, e.ID)
				case dup:
					t.Errorf("%s: a duplicate on first sight", e.ID)
				default:
					acked = append(acked, e.ID)
				}
				n := len(failed)
				mu.Unlock()
				if n >= 40 {
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(failed) == 0 {
		t.Fatal("the disk never filled up")
	}
	t.Logf("disk full after %d events; %d writes failed", len(acked), len(failed))
	if err := db.Check(); err != nil {
		t.Fatalf("check with the disk full: %v", err)
	}

	// Space returns: ingest recovers, the failed ids were never stored.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, id := range failed {
		e := newEvent("shop", id, t0)
		if dup, err := db.Accept(ctx, e, t0.Add(time.Hour), nil); err != nil || dup {
			t.Fatalf("%s after space returned: dup %v, err %v; want accepted", id, dup, err)
		}
	}
	for _, id := range acked {
		if dup, err := db.Accept(ctx, newEvent("shop", id, t0), t0.Add(time.Hour), nil); err != nil || !dup {
			t.Fatalf("acknowledged %s: dup %v, err %v; want a duplicate", id, dup, err)
		}
	}

	// And all of it survives a reopen, consistent.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Check(); err != nil {
		t.Fatalf("check after reopening: %v", err)
	}
	for _, id := range append(acked, failed...) {
		if _, seq, ok, err := db.LookupID(context.Background(), "shop", id); !ok || err != nil {
			t.Fatalf("%s not remembered after reopening: %v", id, err)
		} else if e, err := db.Event(context.Background(), seq); err != nil || e == nil || e.ID != id {
			t.Fatalf("event of %s: %+v, %v", id, e, err)
		}
	}
}
