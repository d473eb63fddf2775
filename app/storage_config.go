package app

import (
	"io/fs"
	"time"
)

// StorageConfig is the [storage] table: where hookbox keeps its state.
type StorageConfig struct {
	// Backend is BackendBBolt (one file in data_dir, the default) or
	// BackendPostgres (one database that several nodes share).
	Backend string
	// URL is the PostgreSQL database's URL. It is a secret (it may carry
	// the password): never logged or shown but masked.
	URL string
	// Lease is how long a node keeps a delivery it took from the shared
	// outbox: if the node dies mid-send, another sends it once the lease
	// has ended. It outlasts every destination's timeout.
	Lease time.Duration
	// SearchIndex keeps a trigram index of the bodies (pg_trgm) for the
	// body search: fast searches over the whole retention, for about a
	// third of PostgreSQL's accepts per second (docs/BENCHMARKS.md). Off,
	// a search reads every body and the index is dropped.
	SearchIndex bool
}

// The storage backends.
const (
	BackendBBolt    = "bbolt"
	BackendPostgres = "postgres"
	// DefaultDatabaseURLEnv names the environment variable that holds the
	// database URL when [storage] gives neither url nor url_env.
	DefaultDatabaseURLEnv = "HOOKBOX_DATABASE_URL"
	// DefaultLease is the lease of a delivery taken from the shared outbox.
	DefaultLease = time.Minute
)

// DataDirMode is the mode of the data directory: its owner only.
const DataDirMode fs.FileMode = 0o700
