package app

// The roles of the upstream checker (app/upstream): see stores.go.

import (
	"context"
	"time"
)

// UpstreamStore is what the checker (app/upstream) needs of the store:
// whether an id is held, its last check kept by name, and the lock that
// lets one node of a cluster at a time check a source.
type UpstreamStore interface {
	// LookupID reports whether source's id is remembered (as InspectStore).
	LookupID(ctx context.Context, source, id string) (expires time.Time, seq uint64, ok bool, err error)
	// Meta and SetMeta keep the last check (as MetaStore).
	Meta(ctx context.Context, name string) ([]byte, error)
	SetMeta(ctx context.Context, name string, value []byte) error
	JobLockStore
}

// JobLockStore lets one caller of a whole cluster at a time run a job
// by name (a source's upstream check): bbolt's lock is the process's,
// PostgreSQL's a session advisory lock that every node shares.
type JobLockStore interface {
	// TryJobLock takes the lock named name unless another caller (on any
	// node) holds it, and returns the function that gives it back; ok
	// false when it is held elsewhere (release is then nil). The lock is
	// given back too when the store closes or, on PostgreSQL, when the
	// node's connection is lost.
	TryJobLock(ctx context.Context, name string) (release func(), ok bool, err error)
}
