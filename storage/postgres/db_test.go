package postgres_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// The store is every role of the domain (app.Store, app/stores.go), and the
// one only it keeps.
var (
	_ app.Store     = (*postgres.DB)(nil)
	_ app.RateStore = (*postgres.DB)(nil)
)

// MustOpen opens a store on a fresh schema and closes it when tb ends.
func MustOpen(tb testing.TB, opt postgres.Options) *postgres.DB {
	tb.Helper()
	return mustOpenURL(tb, pgtest.URL(tb), opt)
}

func mustOpenURL(tb testing.TB, url string, opt postgres.Options) *postgres.DB {
	tb.Helper()
	if opt.Logger == nil {
		opt.Logger = quietLogger
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := postgres.Open(ctx, url, opt)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// quietLogger logs warnings and errors only, so test output stays readable.
var quietLogger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

// The PostgreSQL store passes the conformance suite both stores share.
func TestDB_Conformance(t *testing.T) {
	pgtest.BaseURL(t)
	storetest.Run(t, func(t *testing.T) storage.Store { return MustOpen(t, postgres.Options{}) }, storetest.Damage{
		DropEvent: func(t *testing.T, s storage.Store, seq uint64) storage.Store {
			mustExec(t, s, "DELETE FROM hookbox_events WHERE seq = $1", int64(seq))
			return s
		},
		SpoilEvent: func(t *testing.T, s storage.Store, seq uint64) storage.Store {
			// A count of headers past the record's end.
			mustExec(t, s, `UPDATE hookbox_events SET headers = '\x7f' WHERE seq = $1`, int64(seq))
			return s
		},
	})
}

// mustExec runs sql on s's database and fails t on an error.
func mustExec(t *testing.T, s storage.Store, sql string, args ...any) {
	t.Helper()
	if err := s.(*postgres.DB).Exec(sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
