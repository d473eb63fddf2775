//go:build unix

package storage

import (
	"errors"
	"os"
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
