package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"hookbox/app"
	"hookbox/storage"
	"hookbox/storage/postgres"
	"hookbox/ui"
)

// Every store serves the status pages.
var _ ui.Store = (storage.Store)(nil)

// node is the store serve runs on, with what differs between the backends.
type node struct {
	store storage.Store
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
}

// openStore opens the store cfg's [storage] names.
func openStore(ctx context.Context, cfg *app.Config, logger *slog.Logger) (*node, error) {
	if cfg.Storage.Backend != app.BackendPostgres {
		db, err := storage.Open(cfg.Server.DataDir)
		if err != nil {
			return nil, err
		}
		return &node{store: db, where: db.Path(), leader: func() bool { return true },
			backup:      func() (*os.File, int64, error) { return db.Backup(cfg.Server.DataDir) },
			writeBackup: db}, nil
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	db, err := postgres.Open(octx, cfg.Storage.URL, postgres.Options{Lease: cfg.Storage.Lease, Logger: logger.With("component", "postgres")})
	if err != nil {
		return nil, fmt.Errorf("%s: storage: %w", cfg.Path, err)
	}
	return &node{store: db, where: db.Where(), leader: db.Leader}, nil
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
	backend, err := app.LoadBackend(path)
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
