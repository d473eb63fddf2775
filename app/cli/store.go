package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
)

// node is the store serve runs on, with what differs between the backends.
type node struct {
	store app.Store
	// where says where the state is, for the start-up log: the data
	// file, or the database URL with its password masked.
	where string
	// leader reports whether this node runs the once-per-cluster jobs
	// (sweep, alerts, backups): always, for the one node of a bbolt file.
	leader func() bool
	// backup and writeBackup make hot copies of the data file (bbolt
	// only; nil on PostgreSQL, whose backups are the database's).
	backup      func() (*os.File, int64, error)
	writeBackup app.BackupStore
	// rates reserves the starts of rate-limited destinations for the
	// whole cluster (PostgreSQL only; nil on bbolt, whose one node paces
	// alone).
	rates app.RateStore
	// describe gives h the words of this store for the pages and alerts
	// (bbolt's are h's defaults).
	describe func(h *app.StorageHealth)
}

// openStore opens the store cfg's [storage] names; path is cfg's file.
func openStore(ctx context.Context, path string, cfg *app.Config, logger *slog.Logger) (*node, error) {
	if cfg.Storage.Backend != app.BackendPostgres {
		// The data dir holds every event with its headers: its owner's only.
		if was, err := bboltstore.SecureDir(cfg.Server.DataDir); err != nil {
			logger.Warn("data dir mode not fixed: others may read the events", "dir", cfg.Server.DataDir, slog.Any("error", err))
		} else if was != 0 {
			logger.Warn("data dir mode fixed", "dir", cfg.Server.DataDir, "was", fmt.Sprintf("%04o", was), "now", fmt.Sprintf("%04o", app.DataDirMode))
		}
		// Open takes the data dir's lock file, held until Close.
		db, err := bboltstore.Open(cfg.Server.DataDir)
		if err != nil {
			return nil, withWayOut(err, path, cfg)
		}
		return &node{store: db, where: db.Path(), leader: func() bool { return true },
			backup:      func() (*os.File, int64, error) { return db.Backup(cfg.Server.DataDir) },
			writeBackup: db, describe: func(*app.StorageHealth) {}}, nil
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	db, err := postgres.Open(octx, cfg.Storage.URL, postgres.Options{Lease: cfg.Storage.Lease, NoSearchIndex: !cfg.Storage.SearchIndex, Logger: logger.With("component", "postgres")})
	if err != nil {
		return nil, fmt.Errorf("%s: storage: %w", path, err)
	}
	return &node{store: db, where: db.Where(), leader: db.Leader, rates: db, describe: describePostgres}, nil
}

// describePostgres gives h what to say of a PostgreSQL store.
func describePostgres(h *app.StorageHealth) {
	h.Store = "the database"
	h.Fix = "Check the PostgreSQL database: that it runs and this node reaches it, that it accepts writes " +
		"(not a read-only replica after a fail-over), that hookbox's user may write its tables, and that its disk has space; this node's log has the errors."
	h.DamageFix = "Bytes hookbox cannot read were written into its tables (by hand, or a damaged disk): take a pg_dump now and look at the rows named."
}

// withWayOut adds to an error of a data file Open refused how to get
// going again: the latest backup in backup.dir and the command that puts it
// in place, or how to start afresh on purpose.
func withWayOut(err error, configPath string, cfg *app.Config) error {
	lost, newer := errors.Is(err, bboltstore.ErrDataLost), errors.Is(err, bboltstore.ErrNewerFormat)
	if !lost && !newer {
		return err
	}
	restore := fmt.Sprintf("no backup is in backup.dir (%s): restore a copy saved with hookbox backup, hookbox restore -config %s FILE", cfg.Backup.Dir, configPath)
	if latest, _ := app.LatestBackup(cfg.Backup.Dir); latest != "" {
		restore = fmt.Sprintf("restore the latest backup in backup.dir (hookbox stopped): hookbox restore -config %s %s", configPath, latest)
	}
	if newer {
		return fmt.Errorf("%w. Run the newer hookbox that wrote it, or %s", err, restore)
	}
	return fmt.Errorf("%w. To recover, %s. To start afresh on purpose instead, with no remembered id and no pending delivery, move %s away and delete %s",
		err, restore, bboltstore.FileName, filepath.Join(cfg.Server.DataDir, bboltstore.MarkerName))
}

// onLeader runs job only on the node that runs the cluster's jobs.
func (n *node) onLeader(job func()) func() {
	return func() {
		if n.leader() {
			job()
		}
	}
}

// errDatabaseBackups is what backup and restore say on PostgreSQL.
var errDatabaseBackups = errors.New(`[storage] backend = "postgres": the backups are the database's, not hookbox's: ` +
	"use pg_dump (pg_dump -Fc -f hookbox.dump DATABASE) or your provider's point-in-time recovery, and pg_restore to restore")

// refuseOnPostgres prints errDatabaseBackups and returns true when the
// config at path keeps state in PostgreSQL.
func refuseOnPostgres(cmd, path string, stderr io.Writer) bool {
	backend, err := config.LoadBackend(path)
	if err != nil || backend != app.BackendPostgres {
		return false // the command reports a broken config itself
	}
	fmt.Fprintf(stderr, "hookbox %s: %s: %v\n", cmd, path, errDatabaseBackups)
	return true
}

// dataWhere says where cfg keeps its state, for hookbox check: the data
// directory, or the database with its password masked.
func dataWhere(cfg *app.Config) string {
	if cfg.Storage.Backend == app.BackendPostgres {
		return fmt.Sprintf("PostgreSQL at %s (deliveries leased for %v)", postgres.MaskURL(cfg.Storage.URL), cfg.Storage.Lease)
	}
	return cfg.Server.DataDir
}
