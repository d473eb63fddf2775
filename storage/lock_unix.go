//go:build unix

package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockFile takes the exclusive lock bbolt takes on path (flock), trying
// for up to wait; ErrLocked when another process keeps it, an error
// wrapping os.ErrNotExist when there is no such file.
func lockFile(path string, wait time.Duration) (unlock func(), err error) {
	f, err := os.Open(path)
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

// lockDir takes the exclusive lock of the data directory dir: a flock on
// its lock file (LockName, created 0600 if absent), trying for up to wait;
// ErrLocked when another process keeps it. serve holds it for its lifetime
// and restore for its whole run. The lock file is never replaced or
// removed, unlike the data file a restore renames over: a lock on the data
// file itself let a server that opened the file just before a restore
// renamed a copy over it wait for the restore, then run on the replaced
// file. Should the lock file be replaced all the same, the lock taken on
// the old one is dropped and taken again on the one in place.
func lockDir(dir string, wait time.Duration) (unlock func(), err error) {
	path := filepath.Join(dir, LockName)
	deadline := time.Now().Add(wait)
	for {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			held, herr := f.Stat()
			now, nerr := os.Stat(path)
			if herr == nil && nerr == nil && os.SameFile(held, now) {
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

// chownLike gives path the owner and group of ref when running as root
// (a root restore must leave a file the hookbox user can open); otherwise
// the file already belongs to the caller.
func chownLike(path, ref string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Stat(ref)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return os.Chown(path, int(st.Uid), int(st.Gid))
}
