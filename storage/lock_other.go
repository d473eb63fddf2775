//go:build !unix

package storage

import (
	"os"
	"path/filepath"
	"time"
)

// lockFile only checks that path exists where flock is not available.
func lockFile(path string, _ time.Duration) (func(), error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return func() {}, nil
}

// lockDir only creates the lock file where flock is not available.
func lockDir(dir string, _ time.Duration) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

func chownLike(string, string) error { return nil }
