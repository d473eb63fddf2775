package bboltstore_test

import (
	"context"
	"time"

	"hookbox/app"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"hookbox/storage"
	"hookbox/storage/bboltstore"
	"hookbox/storage/storetest"
)

// The bbolt store keeps the hourly counts as the suite wants them.
func TestDB_Counts(t *testing.T) {
	storetest.RunCounts(t, func(t *testing.T) (storage.Store, func(*testing.T, storage.Store) storage.Store) {
		return MustOpenDB(t), func(t *testing.T, s storage.Store) storage.Store {
			db := s.(*bboltstore.DB)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpenDir(t, filepath.Dir(db.Path()))
		}
	})
}

// A data file from before the counts bucket opens, gets the bucket, and
// counts from then on.
func TestDB_CountsOldFile(t *testing.T) {
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	db.Close()
	withBolt(t, dir, func(tx *bolt.Tx) error { return tx.DeleteBucket([]byte("counts")) })
	db = mustOpenDir(t, dir)
	if hs, err := db.HourlyCounts(context.Background(), t0, t0); err != nil || len(hs) != 0 {
		t.Fatalf("HourlyCounts = %v, %v; want none", hs, err)
	}
	e := newEvent("shop", "a", t0)
	if dup, err := db.Accept(context.Background(), e, t0.Add(time.Hour), nil); err != nil || dup {
		t.Fatalf("Accept = %v, %v", dup, err)
	}
	if hs, err := db.HourlyCounts(context.Background(), t0, t0); err != nil || len(hs) != 1 || hs[0].Counts[app.KindAccepted] != 1 {
		t.Fatalf("HourlyCounts = %v, %v; want one accepted", hs, err)
	}
}

// The bbolt store keeps the counts by name as the suite wants them.
func TestDB_Named(t *testing.T) {
	storetest.RunNamed(t, func(t *testing.T) (storage.Store, func(*testing.T, storage.Store) storage.Store) {
		return MustOpenDB(t), func(t *testing.T, s storage.Store) storage.Store {
			db := s.(*bboltstore.DB)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpenDir(t, filepath.Dir(db.Path()))
		}
	})
}
