package bboltstore_test

import (
	"errors"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"hookbox/app"
	"hookbox/storage"
	"hookbox/storage/bboltstore"
	"hookbox/storage/storetest"
)

// The store is every role of the domain (app.Store, app/stores.go), and the
// one only it keeps.
var (
	_ app.Store       = (*bboltstore.DB)(nil)
	_ app.BackupStore = (*bboltstore.DB)(nil)
)

// The bbolt store passes the conformance suite both stores share, and its
// file passes bbolt's consistency check after each test.
func TestDB_Conformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storage.Store {
		db := MustOpenDB(t)
		t.Cleanup(func() { // runs before MustOpenDB's Close
			if err := db.Check(); err != nil && !errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
				t.Errorf("bbolt check: %v", err)
			}
		})
		return db
	}, storetest.Damage{
		DropEvent: func(t *testing.T, s storage.Store, seq uint64) storage.Store {
			return changeClosed(t, s, func(tx *bolt.Tx) error { return tx.Bucket([]byte("events")).Delete(seqKey(seq)) })
		},
		SpoilEvent: func(t *testing.T, s storage.Store, seq uint64) storage.Store {
			return changeClosed(t, s, func(tx *bolt.Tx) error {
				ev := tx.Bucket([]byte("events"))
				newer := append([]byte(nil), ev.Get(seqKey(seq))...)
				newer[0] = 9 // a newer build's layout
				return ev.Put(seqKey(seq), newer)
			})
		},
	})
}

// changeClosed closes s, runs fn in a write transaction on its file, and
// opens it again.
func changeClosed(t *testing.T, s storage.Store, fn func(*bolt.Tx) error) storage.Store {
	t.Helper()
	db := s.(*bboltstore.DB)
	dir := filepath.Dir(db.Path())
	db.Close()
	withBolt(t, dir, fn)
	return mustOpenDir(t, dir)
}
