package bboltstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"hookbox/app/datadir"
)

// initialMmapSize is the address space bbolt maps from the start. A write
// that outgrows the map must remap, and a remap waits for every read
// transaction to end; a backup is one long read transaction. Mapping 1 GiB
// up front (address space, not memory) keeps ingest from waiting on a
// backup until the file passes that size.
var initialMmapSize = func() int {
	if strconv.IntSize == 64 {
		return 1 << 30
	}
	return 0
}()

// WriteBackup writes a consistent copy of the data file's live data
// (compactTo: its free pages left out) to path: into a temporary file in
// path's directory first, synced, then renamed, and the directory and its
// parent synced, so path is either absent or a complete copy, even after a
// power cut (TestPowerLoss_Backup). It returns the copy's size. The
// temporary file of a run that died is named "." + the base of path +
// ".<random>.tmp".
func (d *DB) WriteBackup(ctx context.Context, path string) (int64, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("backup: %w", err)
	}
	tmp := f.Name()
	f.Close()
	n, err := d.compactTo(ctx, tmp)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, fmt.Errorf("backup to %s: %w", path, err)
	}
	// The directory's parent too: the directory may be new (the scheduled
	// backups make theirs at the first run), and a power cut takes a new
	// directory, backups and all, until its parent is synced.
	if err := errors.Join(syncDir(dir), syncDir(filepath.Dir(dir))); err != nil {
		return 0, fmt.Errorf("backup to %s: %w", path, err)
	}
	return n, nil
}

// makeDir creates dir and its missing parents, each durable: a new
// directory's name is on the disk only once its parent is synced.
func makeDir(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case err == nil && fi.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s is not a directory", dir)
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := makeDir(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(parent)
}

// syncDir makes a rename or a new file in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// CheckFile opens the bbolt file at path read-only and runs bbolt's
// consistency check on it; it returns the first problem found. path is
// opened as package datadir opens: never through a link another user
// controls, never waiting on a FIFO (a restore's copy may be in the
// service user's backup directory).
func CheckFile(path string) error {
	f, err := datadir.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	return CheckOpen(f)
}

// CheckOpen is CheckFile on a file already open: what it checks is that
// file, whatever its name holds by then.
func CheckOpen(f *os.File) error {
	path := f.Name()
	if err := checkPages(f); err != nil { // bbolt would crash on a short file
		return err
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second,
		OpenFile: func(string, int, os.FileMode) (*os.File, error) { return reopen(f) }})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return fmt.Errorf("open %s: %w", path, ErrLocked)
		}
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drain: the checker runs until done
			if first == nil {
				first = err
			}
		}
		if first == nil && tx.Bucket(bucketEvents) == nil {
			first = errors.New("no events bucket: not a hookbox data file")
		}
		return first
	})
	if err != nil {
		return fmt.Errorf("check %s: %w", path, err)
	}
	return nil
}
