// The scheduled backups: a hot copy of the data file, pruned to
// backup.keep.

package backup

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"hookbox/app"
)

// Status is what the status page shows of the backups.
type Status struct {
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
	Store app.BackupStore
	Dir   string
	Keep  int
	// Now is the clock; tests replace it.
	Now    func() time.Time
	Logger *slog.Logger
	// Alert, when set, hears the outcome of every run (nil error: success).
	Alert func(ctx context.Context, err error)

	run    sync.Mutex // one backup at a time
	mu     sync.Mutex // guards status
	status Status
}

// New builds the backuper of cfg over store. It finds the newest
// backup already in the directory, so the status page shows it after a
// restart.
func New(cfg *app.Config, store app.BackupStore) *Backuper {
	b := &Backuper{
		Store:  store,
		Dir:    cfg.Backup.Dir,
		Keep:   cfg.Backup.Keep,
		Now:    time.Now,
		Logger: slog.With("component", "backup"),
	}
	if files, err := app.ListBackups(b.Dir); err == nil && len(files) > 0 {
		newest := files[len(files)-1]
		if fi, err := os.Stat(filepath.Join(b.Dir, newest.Name)); err == nil {
			b.status = Status{At: newest.At, Size: fi.Size(), Path: filepath.Join(b.Dir, newest.Name)}
		}
	}
	return b
}

// Status returns the newest good backup and the error of the latest run.
func (b *Backuper) Status() Status {
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
func (b *Backuper) Backup(ctx context.Context) (Status, error) {
	b.run.Lock()
	defer b.run.Unlock()
	at := b.Now().UTC().Truncate(time.Second)
	var seq uint64 = 1
	if files, err := app.ListBackups(b.Dir); err == nil && len(files) > 0 {
		seq = files[len(files)-1].Seq + 1
	}
	path := filepath.Join(b.Dir, app.BackupName(seq, at))
	size, err := b.write(ctx, path)
	b.mu.Lock()
	defer b.mu.Unlock()
	if err != nil {
		b.status.Err = err
		return b.status, err
	}
	b.status = Status{At: at, Size: size, Path: path}
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

// prune deletes the oldest backups beyond Keep.
func (b *Backuper) prune() error {
	files, err := app.ListBackups(b.Dir)
	if err != nil {
		return err
	}
	var errs []error
	for len(files) > b.Keep {
		if err := os.Remove(filepath.Join(b.Dir, files[0].Name)); err != nil {
			errs = append(errs, err)
		} else {
			b.Logger.Info("old backup deleted", "file", files[0].Name)
		}
		files = files[1:]
	}
	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func (b *Backuper) removeTemps() {
	matches, _ := filepath.Glob(filepath.Join(b.Dir, "."+app.BackupPrefix+"*"+app.BackupExt+".*.tmp"))
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
