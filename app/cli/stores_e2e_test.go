package cli_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"hookbox/storage"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

// storeCase is one store the end-to-end tests run the binary on.
type storeCase struct {
	name string
	url  string // PostgreSQL: the database (a schema of the test's own); "" for bbolt
}

// eachStore runs f on bbolt, and on PostgreSQL when the test database is
// set (pgtest: skipped without it, failed without it under CI=true).
func eachStore(t *testing.T, f func(t *testing.T, st storeCase)) {
	t.Run("bbolt", func(t *testing.T) { f(t, storeCase{name: "bbolt"}) })
	t.Run("postgres", func(t *testing.T) { f(t, storeCase{name: "postgres", url: pgtest.URL(t)}) })
}

// config returns the [storage] table of the store, with a lease that
// outlasts sends of up to timeout.
func (s storeCase) config(timeout time.Duration) string {
	if s.url == "" {
		return ""
	}
	return fmt.Sprintf("\n[storage]\nbackend = \"postgres\"\nurl = %q\nlease = %q\n", s.url, (timeout + 5*time.Second).String())
}

// open opens the store hookbox used (its process stopped), for checks.
func (s storeCase) open(t *testing.T, dir string) storage.Store {
	t.Helper()
	if s.url == "" {
		db, err := bboltstore.Open(filepath.Join(dir, "data"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	db, err := postgres.Open(context.Background(), s.url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
