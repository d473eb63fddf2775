//go:build !unix

package bboltstore

import (
	"os"
	"time"

	"hookbox/app/datadir"
)

// lockFile only checks that the file name in d exists where flock is not
// available.
func lockFile(d *datadir.Dir, name string, _ time.Duration) (func(), error) {
	f, err := d.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	f.Close()
	return func() {}, nil
}

// lockDir only creates the lock file where flock is not available.
func lockDir(d *datadir.Dir, _ time.Duration) (func(), error) {
	f, err := d.OpenFile(LockName, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	return func() { f.Close() }, nil
}

// reopen opens f's name again where descriptors cannot be duplicated.
func reopen(f *os.File) (*os.File, error) { return os.Open(f.Name()) }

// fileOwner knows no owners here.
func fileOwner(*os.File) (uid, gid int, ok bool) { return 0, 0, false }
