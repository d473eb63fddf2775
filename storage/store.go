// Package storage holds what hookbox's stores share and no store owns:
// the Store interface that the bbolt store (storage/bboltstore) and the
// PostgreSQL one (storage/postgres) implement and storetest checks, and
// the errors they answer alike. It imports no storage technology.
package storage

import (
	"context"
	"errors"
	"time"

	"hookbox/app"
)

// Store is everything hookbox's server uses of a store: the sum of the
// domain's roles (app.Store: the receiver's, the dispatcher's outbox, the
// sweeper's, the counts, the read model), the login's app.MetaStore, and
// what serve and the tests ask of it. Every method that reads or writes
// takes ctx first and returns ctx's error once it is done (storetest's
// Cancelled).
// bboltstore.DB and postgres.DB implement it, and storetest.Run holds the
// behaviour both must show.
type Store interface {
	app.Store
	app.MetaStore
	app.ReadModel
	app.ControlStore
	app.HealthStore
	app.AccessStore
	app.AuditStore

	// LookupID reports whether source's id is remembered, until when, and
	// the seq of the event accepted with it.
	LookupID(ctx context.Context, source, id string) (expires time.Time, seq uint64, ok bool, err error)
	// Counts reports how many ids are remembered and how many events are stored.
	Counts(ctx context.Context) (ids, events int, err error)
	// PendingCount returns the number of debounced deliveries waiting for
	// their window.
	PendingCount(ctx context.Context) (int, error)
	// OnOpened sets f to be called, once per commit, after a commit that
	// opened deliveries or debounce steps; f must not block.
	OnOpened(f func())
	// OnCommit sets f to be told the outcome of every commit of a write:
	// nil, or the error that failed it. hookbox follows its storage's
	// health with it (app.StorageHealth); f must not block.
	OnCommit(f func(err error))
	// Ping reports whether the store can serve; it backs /healthz.
	Ping(ctx context.Context) error
	// Close lets writes in flight finish, then refuses new ones.
	Close() error
}

// ErrClosed is returned by a store's writes after Close.
var ErrClosed = errors.New("storage closed")
