//go:build unix

package datadir_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"hookbox/app/datadir"
)

func mustOpen(t *testing.T, dir string) *datadir.Dir {
	t.Helper()
	d, err := datadir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func owner(t *testing.T, path string) (uid, gid int, mode os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid), fi.Mode()
}

// A name another user put there is opened only when it is a regular file:
// a link is not followed, a FIFO not waited on.
func TestDir_OpenFile(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("OK", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(dir, "plain"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := d.OpenFile("plain", os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	})
	t.Run("ErrSymlink", func(t *testing.T) {
		os.Symlink(victim, filepath.Join(dir, "link"))
		for _, flag := range []int{os.O_RDONLY, os.O_RDWR | os.O_CREATE} {
			if _, err := d.OpenFile("link", flag, 0o600); !errors.Is(err, datadir.ErrNotRegular) {
				t.Fatalf("flag %#x: err = %v, want ErrNotRegular", flag, err)
			}
		}
	})
	t.Run("ErrDanglingSymlink", func(t *testing.T) {
		target := filepath.Join(filepath.Dir(victim), "made-by-root")
		os.Symlink(target, filepath.Join(dir, "dangling"))
		if _, err := d.OpenFile("dangling", os.O_RDWR|os.O_CREATE, 0o600); err == nil {
			t.Fatal("opened a dangling link for creation")
		}
		if _, err := os.Lstat(target); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a file was made where the link pointed: %v", err)
		}
	})
	t.Run("ErrFIFO", func(t *testing.T) {
		if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := d.OpenFile("fifo", os.O_RDONLY, 0); done <- err }()
		select {
		case err := <-done:
			if !errors.Is(err, datadir.ErrNotRegular) {
				t.Fatalf("err = %v, want ErrNotRegular", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the open of a FIFO blocked")
		}
	})
	if got, err := os.ReadFile(victim); err != nil || string(got) != "root's" {
		t.Fatalf("the victim: %q %v", got, err)
	}
}

// Under root, a file made in a directory another user owns is that
// user's, through the open file; one already there keeps its owner.
func TestDir_Owner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root makes files for another user")
	}
	dir := t.TempDir()
	const uid, gid = 54321, 54322 // no such user needed
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	d := mustOpen(t, dir)
	f, err := d.OpenFile("made", os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if u, g, m := owner(t, filepath.Join(dir, "made")); u != uid || g != gid || m != 0o640 {
		t.Fatalf("made: %d:%d %v, want %d:%d -rw-r-----", u, g, m, uid, gid)
	}
	if err := os.WriteFile(filepath.Join(dir, "root's"), []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Root's own file in the directory (a hard link the owner made, say)
	// is read, never handed over nor written to.
	f, err = d.OpenFile("root's", os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := d.OpenFile("root's", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600); !errors.Is(err, datadir.ErrOtherOwner) {
		t.Fatalf("root opened another owner's file to write: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "root's")); fi.Size() == 0 {
		t.Fatal("it was truncated")
	}
	if u, _, _ := owner(t, filepath.Join(dir, "root's")); u != 0 {
		t.Fatalf("an existing file of root's was handed to %d", u)
	}
	nf, err := d.NewFile(".new-*", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	nf.WriteString("content")
	if err := nf.Publish("published"); err != nil {
		t.Fatal(err)
	}
	nf.Discard()
	if u, g, m := owner(t, filepath.Join(dir, "published")); u != uid || g != gid || m != 0o600 {
		t.Fatalf("published: %d:%d %v, want %d:%d -rw-------", u, g, m, uid, gid)
	}
}

// While a new file is written, the directory's owner can see one new
// name, a directory it cannot change: renaming that away and putting a
// link in its place changes nothing of what Publish puts in place, and
// nothing is left afterwards.
func TestFile_Publish(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir)
	f, err := d.NewFile(".new-*", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Discard()
	names, _ := os.ReadDir(dir)
	if len(names) != 1 || !names[0].IsDir() {
		t.Fatalf("while written, the directory holds %v, want one private directory", names)
	}
	priv := filepath.Join(dir, names[0].Name())
	if u, _, m := owner(t, priv); u != os.Geteuid() || m.Perm() != 0o700 {
		t.Fatalf("the private directory is %d %v", u, m)
	}
	f.WriteString("content")
	// The owner of dir moves the private directory away and puts a link
	// to somewhere else under its name.
	if err := os.Rename(priv, filepath.Join(dir, "moved")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), priv); err != nil {
		t.Fatal(err)
	}
	if err := f.Publish("final"); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "final")); err != nil || string(got) != "content" {
		t.Fatalf("final: %q %v", got, err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "final")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("final is not a regular file: %v", err)
	}
	if err := f.Publish("again"); err == nil {
		t.Fatal("published twice")
	}
}

// Discard leaves nothing behind.
func TestFile_Discard(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir)
	f, err := d.NewFile(".new-*", 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("dropped")
	f.Discard()
	if names, _ := os.ReadDir(dir); len(names) != 0 {
		t.Fatalf("left in the directory: %v", names)
	}
}

// A path is followed through a link only where nobody but root (and the
// caller) could have made or changed the link.
func TestOpen_Links(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the rule is about links other users control")
	}
	base := t.TempDir()
	target := filepath.Join(base, "target")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	mk := func(name string, mode os.FileMode, uid int) string {
		d := filepath.Join(base, name)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, uid, uid); err != nil {
			t.Fatal(err)
		}
		return d
	}
	link := func(dir string, uid int) string {
		l := filepath.Join(dir, "link")
		if err := os.Symlink(target, l); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(l, uid, uid); err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, c := range []struct {
		name string
		dir  string
		uid  int // the link's
		ok   bool
	}{
		{"RootsDir", mk("roots", 0o755, 0), 0, true},
		{"OtherUsersDir", mk("others", 0o700, 54321), 54321, false},
		{"WritableByOthers", mk("open", 0o777, 0), 0, false},
		{"StickyRootsLink", mk("sticky1", 0o777|os.ModeSticky, 0), 0, true},
		{"StickyOthersLink", mk("sticky2", 0o777|os.ModeSticky, 0), 54321, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := link(c.dir, c.uid)
			d, err := datadir.Open(filepath.Join(l, "."))
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				d.Close()
				return
			}
			if !errors.Is(err, datadir.ErrUntrustedLink) {
				t.Fatalf("err = %v, want ErrUntrustedLink", err)
			}
			if _, err := datadir.OpenFile(filepath.Join(l, "file"), os.O_RDWR|os.O_CREATE, 0o600); !errors.Is(err, datadir.ErrUntrustedLink) {
				t.Fatalf("OpenFile through it: err = %v, want ErrUntrustedLink", err)
			}
		})
	}
	if names, _ := os.ReadDir(target); len(names) != 0 {
		t.Fatalf("files made through refused links: %v", names)
	}
}
