package bboltstore

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"hookbox/app/datadir"
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
// The new file is made with the previous file's owner (else the data
// directory's) and mode 0600, written, synced, and renamed into place, so
// the data file is always either the old one or the complete copy.
// Deliveries that were pending in the copy go out when hookbox starts on
// it; the ids it remembers stay remembered.
//
// Root runs it in a directory the service user owns and may change
// meanwhile, and from a copy that may be in the service user's backup
// directory: from is opened once (through no link the service user
// controls, and not a FIFO) and that open file is what is checked and
// copied; every name in
// dataDir is taken relative to the directory held open, never through a
// link; the new file gets its owner through the open file, never by name
// (package datadir). TestLocalUser_RootCommands races it.
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
	src, err := datadir.OpenFile(from, os.O_RDONLY, 0)
	if err == nil {
		defer src.Close()
		err = CheckOpen(src)
	}
	if err != nil {
		return nil, fmt.Errorf("%s is not a sound hookbox data file, nothing was changed: %w", from, err)
	}
	fi, err := src.Stat()
	if err != nil {
		return nil, err
	}
	// A new data directory must survive a power cut (TestPowerLoss_Restore).
	if err := makeDir(dataDir); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dataDir, err)
	}
	d, err := datadir.Open(dataDir)
	if err != nil {
		return nil, fmt.Errorf("open data dir %s: %w", dataDir, err)
	}
	defer d.Close()
	// Hold the data directory's lock for the whole restore: a hookbox
	// starting meanwhile waits for it, then opens the file in place, or
	// fails; a running one makes the restore fail. The data file's own
	// lock too, which is all a hookbox from before the lock file holds.
	unlockDir, err := lockDir(d, time.Second)
	if errors.Is(err, ErrLocked) {
		return nil, fmt.Errorf("%s: %w: stop it first (systemctl stop hookbox)", dataDir, ErrLocked)
	} else if err != nil {
		return nil, err
	}
	defer unlockDir()
	unlock, err := lockFile(d, FileName, time.Second)
	switch {
	case errors.Is(err, os.ErrNotExist):
		unlock = func() {}
	case errors.Is(err, ErrLocked):
		return nil, fmt.Errorf("%s: %w: stop it first (systemctl stop hookbox)", path, ErrLocked)
	case err != nil:
		return nil, err
	}
	defer unlock()
	if err := logHoldsNone(d); err != nil {
		return nil, fmt.Errorf("restore: %w; nothing was changed", err)
	}
	out, err := d.NewFile("."+FileName+".restore-*.tmp", 0o600)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	defer out.Discard()
	if old, err := d.OpenFile(FileName, os.O_RDONLY, 0); err == nil {
		uid, gid, ok := fileOwner(old)
		old.Close()
		if dirUID, dirGID := d.Owner(); ok && os.Geteuid() == 0 && (uid != dirUID || gid != dirGID) {
			if err := out.Chown(uid, gid); err != nil {
				return nil, fmt.Errorf("give the copy the owner of %s: %w", path, err)
			}
		}
	}
	n, err := io.Copy(out, io.NewSectionReader(src, 0, fi.Size()))
	if err == nil {
		err = out.Sync()
	}
	if err != nil {
		return nil, fmt.Errorf("copy %s into %s: %w", from, dataDir, err)
	}
	res := &Restored{Path: path, Size: n}
	if had, err := d.Exists(FileName); err != nil {
		return nil, err
	} else if had {
		// A second name for the old file, then one atomic rename over the
		// data file: there is no moment without a data file. A restore in
		// the same second as the last one adds -2, -3….
		base := FileName + ReplacedSuffix + now.UTC().Format("20060102-150405")
		replaced := base
		for n := 2; ; n++ {
			err := d.Link(FileName, replaced)
			if err == nil {
				break
			}
			if !errors.Is(err, os.ErrExist) || n > 1000 {
				return nil, fmt.Errorf("keep the data file as %s: %w", filepath.Join(dataDir, replaced), err)
			}
			replaced = fmt.Sprintf("%s-%d", base, n)
		}
		res.Replaced = filepath.Join(dataDir, replaced)
	}
	if err := out.Publish(FileName); err != nil {
		if errors.Is(err, datadir.ErrReplaced) && res.Replaced != "" {
			return nil, fmt.Errorf("put the copy in place: %w; the previous data file is kept as %s", err, res.Replaced)
		}
		if res.Replaced != "" {
			d.Remove(filepath.Base(res.Replaced))
		}
		return nil, fmt.Errorf("put the copy in place: %w", err)
	}
	if err := d.Sync(); err != nil {
		return nil, err
	}
	return res, nil
}

// logHoldsNone fails when the intake log in d holds events: answered,
// perhaps not in the data file yet (hookbox did not stop cleanly). They
// belong to the data file a restore would replace, and would be lost with
// it, or worse applied to the backup put in its place.
func logHoldsNone(d *datadir.Dir) error {
	n := 0
	for _, name := range logNames {
		f, err := d.OpenFile(name, os.O_RDONLY, 0)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		recs, err := readLogFile(f, 0)
		f.Close()
		if err != nil {
			return fmt.Errorf("read the intake log %s: %w", name, err)
		}
		n += len(recs)
	}
	if n > 0 {
		return fmt.Errorf("the intake log (%s, %s in %s) holds %d events that hookbox answered and may not have put in the data file yet: it did not stop cleanly; start hookbox and stop it once (it applies them), then restore; or remove those two files to give the events up", logNames[0], logNames[1], d.Path(), n)
	}
	return nil
}
