//go:build unix

package bboltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"hookbox/app/datadir"
)

// lockFile takes the exclusive lock bbolt takes on the file name in d
// (flock), trying for up to wait; ErrLocked when another process keeps
// it, an error wrapping os.ErrNotExist when there is no such file. The
// file is opened as package datadir opens: a link or a FIFO put under the
// name is refused, not followed or waited on.
func lockFile(d *datadir.Dir, name string, wait time.Duration) (unlock func(), err error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, err
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, ErrLocked
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// lockDir takes the exclusive lock of the data directory d: a flock on
// its lock file (LockName, created 0600 for d's owner if absent), trying
// for up to wait; ErrLocked when another process keeps it. serve holds it
// for its lifetime and restore for its whole run. The lock file is never
// replaced or removed, unlike the data file a restore renames over: a lock
// on the data file itself let a server that opened the file just before a
// restore renamed a copy over it wait for the restore, then run on the
// replaced file. Should the lock file be replaced all the same, the lock
// taken on the old one is dropped and taken again on the one in place.
// A link or FIFO under its name is refused (root runs restore and passwd
// in the service user's directory).
func lockDir(d *datadir.Dir, wait time.Duration) (unlock func(), err error) {
	path := filepath.Join(d.Path(), LockName)
	deadline := time.Now().Add(wait)
	for {
		f, err := d.OpenFile(LockName, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", d.Path(), err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			if held, herr := d.Holds(LockName, f); herr == nil && held {
				return func() { f.Close() }, nil // closing releases the lock
			}
			f.Close() // replaced meanwhile: lock the file in place
			continue
		}
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s: %w", path, ErrLocked)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// reopen returns a second descriptor of f, for bbolt to open the very file
// checked (and close it without closing f).
func reopen(f *os.File) (*os.File, error) {
	fd, err := syscall.Dup(int(f.Fd()))
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// fileOwner returns the user and group that own f.
func fileOwner(f *os.File) (uid, gid int, ok bool) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Gid), true
}
