package storage_test

import (
	"errors"
	"testing"

	bolterrors "go.etcd.io/bbolt/errors"

	"hookbox/storage"
	"hookbox/storage/storetest"
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
	})
}
