package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"sync"
	"time"
)

// BackupPrefix and BackupExt frame the names of scheduled backups:
// hookbox-NNNNNN-YYYYMMDD-HHMMSS.db. NNNNNN counts the backups in the
// order they were made (one more than the highest in the directory), and
// that order, never the time (UTC, for people), decides which are the
// newest: a clock that ran ahead and was set right gives later backups
// earlier times.
const (
	BackupPrefix     = "hookbox-"
	BackupExt        = ".db"
	backupTimeLayout = "20060102-150405"
)

// backupName matches a backup's name; oldBackupName the names of builds
// before the count (time only), older than any counted one.
var (
	backupName    = regexp.MustCompile(`^hookbox-(\d{6,18})-(\d{8}-\d{6})\.db$`)
	oldBackupName = regexp.MustCompile(`^hookbox-(\d{8}-\d{6})\.db$`)
)

// backupFile is a backup in the directory: its name, its place in the
// order backups were made (0 for an older build's), and its time.
type backupFile struct {
	name string
	seq  uint64
	at   time.Time
}

// parseBackupName reads a backup's name; ok is false for other files.
func parseBackupName(name string) (f backupFile, ok bool) {
	var at string
	if m := backupName.FindStringSubmatch(name); m != nil {
		f.seq, _ = strconv.ParseUint(m[1], 10, 64)
		at = m[2]
	} else if m := oldBackupName.FindStringSubmatch(name); m != nil {
		at = m[1]
	} else {
		return f, false
	}
	f.name = name
	f.at, _ = time.Parse(backupTimeLayout, at)
	return f, true
}

// BackupStatus is what the status page shows of the backups.
type BackupStatus struct {
	// At and Size describe the newest good backup (zero: none yet).
	At   time.Time
	Size int64
	Path string
	// Err is the failure of the latest run when it failed, else nil.
	Err error
}

// Backuper takes the scheduled backups: a hot copy of the data file in
// Dir, then deletes the oldest beyond Keep. A failure is logged and
// reported through Alert; it never touches ingest.
type Backuper struct {
	Store BackupStore
	Dir   string
	Keep  int
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger
	// Alert, when set, hears the outcome of every run (nil error: success).
	Alert func(ctx context.Context, err error)

	run    sync.Mutex // one backup at a time
	mu     sync.Mutex // guards status
	status BackupStatus
}

// NewBackuper builds the backuper of cfg over store. It finds the newest
// backup already in the directory, so the status page shows it after a
// restart.
func NewBackuper(cfg *Config, store BackupStore) *Backuper {
	b := &Backuper{
		Store:  store,
		Dir:    cfg.Backup.Dir,
		Keep:   cfg.Backup.Keep,
		Now:    time.Now,
		Logger: slog.With("component", "backup"),
	}
	if files, err := b.list(); err == nil && len(files) > 0 {
		newest := files[len(files)-1]
		if fi, err := os.Stat(filepath.Join(b.Dir, newest.name)); err == nil {
			b.status = BackupStatus{At: newest.at, Size: fi.Size(), Path: filepath.Join(b.Dir, newest.name)}
		}
	}
	return b
}

// Status returns the newest good backup and the error of the latest run.
func (b *Backuper) Status() BackupStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.status
}

// Last is Status in the shape the status page takes.
func (b *Backuper) Last() (time.Time, int64, error) {
	s := b.Status()
	return s.At, s.Size, s.Err
}

// Backup takes one backup now and prunes the old ones; ctx cancels it.
func (b *Backuper) Backup(ctx context.Context) (BackupStatus, error) {
	b.run.Lock()
	defer b.run.Unlock()
	at := b.Now().UTC().Truncate(time.Second)
	var seq uint64 = 1
	if files, err := b.list(); err == nil && len(files) > 0 {
		seq = files[len(files)-1].seq + 1
	}
	path := filepath.Join(b.Dir, fmt.Sprintf("%s%06d-%s%s", BackupPrefix, seq, at.Format(backupTimeLayout), BackupExt))
	size, err := b.write(ctx, path)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.status.Err = err
		return b.status, err
	}
	b.status = BackupStatus{At: at, Size: size, Path: path}
	return b.status, nil
}

func (b *Backuper) write(ctx context.Context, path string) (int64, error) {
	if err := os.MkdirAll(b.Dir, 0o700); err != nil {
		return 0, fmt.Errorf("backup dir: %w", err)
	}
	// A run that died mid-copy left its temporary file; none runs now.
	b.removeTemps()
	size, err := b.Store.WriteBackup(ctx, path)
	if err != nil {
		return 0, err
	}
	if err := b.prune(); err != nil {
		// The copy is good; a failed prune only keeps too many.
		b.Logger.Warn("prune old backups", slog.Any("error", err))
	}
	return size, nil
}

// list returns the backups in Dir in the order they were made, oldest
// first: by their count, older builds' (by time) before all counted ones.
func (b *Backuper) list() ([]backupFile, error) {
	ents, err := os.ReadDir(b.Dir)
	if err != nil {
		return nil, err
	}
	var files []backupFile
	for _, e := range ents {
		if f, ok := parseBackupName(e.Name()); ok && e.Type().IsRegular() {
			files = append(files, f)
		}
	}
	sort.Slice(files, func(i, j int) bool {
		if files[i].seq != files[j].seq {
			return files[i].seq < files[j].seq
		}
		return files[i].name < files[j].name
	})
	return files, nil
}

// prune deletes the oldest backups beyond Keep.
func (b *Backuper) prune() error {
	files, err := b.list()
	if err != nil {
		return err
	}
	var errs []error
	for len(files) > b.Keep {
		if err := os.Remove(filepath.Join(b.Dir, files[0].name)); err != nil {
			errs = append(errs, err)
		} else {
			b.Logger.Info("old backup deleted", "file", files[0].name)
		}
		files = files[1:]
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func (b *Backuper) removeTemps() {
	matches, _ := filepath.Glob(filepath.Join(b.Dir, "."+BackupPrefix+"*"+BackupExt+".*.tmp"))
	for _, m := range matches {
		os.Remove(m)
	}
}

// Run is the cron job: it backs up, logs and tells Alert.
func (b *Backuper) Run(ctx context.Context) {
	start := time.Now()
	st, err := b.Backup(ctx)
	if err != nil && ctx.Err() != nil {
		b.Logger.Info("backup cut short by shutdown")
		return
	}
	if err != nil {
		b.Logger.Error("backup failed", "dir", b.Dir, slog.Any("error", err))
	} else {
		b.Logger.Info("backup done", "file", st.Path, "bytes", st.Size,
			"duration", time.Since(start).Round(time.Millisecond))
	}
	if b.Alert != nil {
		b.Alert(ctx, err)
	}
}

// LatestBackup returns the path of the backup in dir made last, or ""
// when there is none.
func LatestBackup(dir string) (string, error) {
	files, err := (&Backuper{Dir: dir}).list()
	if err != nil || len(files) == 0 {
		return "", err
	}
	return filepath.Join(dir, files[len(files)-1].name), nil
}
