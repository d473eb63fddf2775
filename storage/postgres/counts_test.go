package postgres_test

import (
	"testing"

	"hookbox/storage"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// The PostgreSQL store keeps the hourly counts as the suite wants them;
// a restart is a new node on the same schema.
func TestDB_Counts(t *testing.T) {
	pgtest.BaseURL(t)
	storetest.RunCounts(t, func(t *testing.T) (storage.Store, func(*testing.T, storage.Store) storage.Store) {
		url := pgtest.URL(t)
		return mustOpenURL(t, url, postgres.Options{}), func(t *testing.T, s storage.Store) storage.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpenURL(t, url, postgres.Options{})
		}
	})
}

// The PostgreSQL store keeps the counts by name as the suite wants them.
func TestDB_Named(t *testing.T) {
	pgtest.BaseURL(t)
	storetest.RunNamed(t, func(t *testing.T) (storage.Store, func(*testing.T, storage.Store) storage.Store) {
		url := pgtest.URL(t)
		return mustOpenURL(t, url, postgres.Options{}), func(t *testing.T, s storage.Store) storage.Store {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			return mustOpenURL(t, url, postgres.Options{})
		}
	})
}
