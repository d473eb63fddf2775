package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// ReplacedSuffix starts the name a restore gives the data file it replaces:
// hookbox.db.replaced-YYYYMMDD-HHMMSS (UTC), with -2, -3… after it when an
// earlier restore took that name in the same second.
const ReplacedSuffix = ".replaced-"

// Restored describes a finished restore.
type Restored struct {
	// Path is the data file now in place, Size its length.
	Path string
	Size int64
	// Replaced is where the previous data file was kept ("" when there was none).
	Replaced string
}

// Restore puts a copy of the bbolt file from in place of the data file in
// dataDir. It refuses while another process (a running hookbox) holds the
// data file, checks from with bbolt's consistency check before it changes
// anything, and keeps the previous data file as hookbox.db.replaced-<now>.
// The new file is written to a temporary name, synced, given the previous
// file's owner and mode 0600, and renamed into place, so the data file is
// always either the old one or the complete copy. Deliveries that were
// pending in the copy go out when hookbox starts on it; the ids it
// remembers stay remembered.
func Restore(dataDir, from string, now time.Time) (*Restored, error) {
	path := filepath.Join(dataDir, FileName)
	absFrom, err1 := filepath.Abs(from)
	absPath, err2 := filepath.Abs(path)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	if absFrom == absPath {
		return nil, fmt.Errorf("%s is the data file itself: give a backup copy", from)
	}
	if err := CheckFile(from); err != nil {
		return nil, fmt.Errorf("%s is not a sound hookbox data file, nothing was changed: %w", from, err)
	}
	// A new data directory must survive a power cut (TestPowerLoss_Restore).
	if err := makeDir(dataDir); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	// Hold the data directory's lock for the whole restore: a hookbox
	// starting meanwhile waits for it, then opens the file in place, or
	// fails; a running one makes the restore fail. The data file's own
	// lock too, which is all a hookbox from before the lock file holds.
	unlockDir, err := lockDir(dataDir, time.Second)
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("%s: %w: stop it first (systemctl stop hookbox)", dataDir, ErrLocked)
	} else if err != nil {
		return nil, err
	}
	defer unlockDir()
	unlock, err := lockFile(path, time.Second)
	switch {
	case errors.Is(err, os.ErrNotExist):
		unlock = func() {}
	case errors.Is(err, ErrLocked):
		return nil, fmt.Errorf("%s: %w: stop it first (systemctl stop hookbox)", path, ErrLocked)
	case err != nil:
		return nil, err
	}
	defer unlock()
	tmp, size, err := copyFile(from, dataDir)
	if err != nil {
		return nil, err
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp)
		}
	}()
	owner := path
	if _, err := os.Stat(path); err != nil {
		owner = dataDir
	}
	if err := chownLike(tmp, owner); err != nil {
		return nil, fmt.Errorf("give %s the owner of %s: %w", tmp, owner, err)
	}
	res := &Restored{Path: path, Size: size}
	if _, err := os.Stat(path); err == nil {
		// A second name for the old file, then one atomic rename over the
		// data file: there is no moment without a data file. A restore in
		// the same second as the last one adds -2, -3….
		base := path + ReplacedSuffix + now.UTC().Format("20060102-150405")
		res.Replaced = base
		for n := 2; ; n++ {
			err := os.Link(path, res.Replaced)
			if err == nil {
				break
			}
			if !errors.Is(err, os.ErrExist) || n > 1000 {
				return nil, fmt.Errorf("keep the data file as %s: %w", res.Replaced, err)
			}
			res.Replaced = fmt.Sprintf("%s-%d", base, n)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		if res.Replaced != "" {
			os.Remove(res.Replaced)
		}
		return nil, fmt.Errorf("put the copy in place: %w", err)
	}
	done = true
	if err := syncDir(dataDir); err != nil {
		return nil, err
	}
	return res, nil
}

// copyFile copies from into a new temporary file in dir, synced and mode
// 0600, and returns its name and size.
func copyFile(from, dir string) (string, int64, error) {
	in, err := os.Open(from)
	if err != nil {
		return "", 0, err
	}
	defer in.Close()
	out, err := os.CreateTemp(dir, "."+FileName+".restore-*.tmp")
	if err != nil {
		return "", 0, fmt.Errorf("restore: %w", err)
	}
	n, err := io.Copy(out, in)
	if err == nil {
		err = out.Chmod(0o600)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", 0, fmt.Errorf("copy %s into %s: %w", from, dir, err)
	}
	return out.Name(), n, nil
}
