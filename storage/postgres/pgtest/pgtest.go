// Package pgtest gives tests a PostgreSQL database of their own: a fresh
// schema in the database HOOKBOX_TEST_DATABASE_URL names (`.ci/postgres
// start` makes a throwaway cluster and prints it), dropped when the test
// ends. Without the variable the tests that need it skip, except under
// CI=true, where they fail: CI must run them.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// trigramOnce creates pg_trgm for the body search index (see URL).
var trigramOnce sync.Once

// EnvURL names the environment variable with the test database's URL.
const EnvURL = "HOOKBOX_TEST_DATABASE_URL"

// BaseURL returns the test database's URL, or skips tb (fails it under CI).
func BaseURL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("CI=true but %s is not set: .ci/run starts a PostgreSQL cluster and sets it", EnvURL)
		}
		tb.Skipf("PostgreSQL tests skipped: set %s (eval \"$(.ci/postgres start)\" makes a throwaway cluster)", EnvURL)
	}
	return base
}

// URL returns the URL of a new, empty schema in the test database (its
// search_path), dropped with everything in it when tb ends.
func URL(tb testing.TB) string {
	tb.Helper()
	base := BaseURL(tb)
	var b [6]byte
	rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	trigramOnce.Do(func() {
		// Once in public for every test schema: a store creates pg_trgm in
		// its own schema when the database has none, and that copy would
		// go (with the indexes of other schemas that use it) when its
		// test's schema is dropped. A failure leaves the stores to try.
		exec(base, "CREATE EXTENSION IF NOT EXISTS pg_trgm SCHEMA public")
	})
	admin(tb, base, "CREATE SCHEMA "+schema)
	tb.Cleanup(func() {
		if err := exec(base, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Database returns the URL of a new, empty database in the test cluster,
// dropped when tb ends: for a test that takes a whole database away from
// hookbox (SetReachable, SetReadOnly), which a schema cannot be.
func Database(tb testing.TB) string {
	tb.Helper()
	base := BaseURL(tb)
	var b [6]byte
	rand.Read(b[:])
	name := "hookbox_t_" + hex.EncodeToString(b[:])
	admin(tb, base, "CREATE DATABASE "+name)
	tb.Cleanup(func() {
		if err := exec(base, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// SetReachable lets clients connect to the database of dbURL (a URL
// Database returned), or refuses them and ends every session it has, as
// a database that went down or out of the node's reach.
func SetReachable(tb testing.TB, dbURL string, reachable bool) {
	tb.Helper()
	name := dbName(tb, dbURL)
	admin(tb, BaseURL(tb), fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %v", name, reachable))
	if !reachable {
		endSessions(tb, name)
	}
}

// SetReadOnly makes the database of dbURL refuse writes (or take them
// again) in every session from now on, as a replica does after a
// fail-over pointed the nodes at it: its current sessions are ended.
func SetReadOnly(tb testing.TB, dbURL string, readOnly bool) {
	tb.Helper()
	name := dbName(tb, dbURL)
	admin(tb, BaseURL(tb), fmt.Sprintf("ALTER DATABASE %s SET default_transaction_read_only = %v", name, readOnly))
	endSessions(tb, name)
}

func endSessions(tb testing.TB, name string) {
	tb.Helper()
	admin(tb, BaseURL(tb), "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '"+name+"' AND pid <> pg_backend_pid()")
}

// dbName returns the database of a URL Database returned.
func dbName(tb testing.TB, dbURL string) string {
	tb.Helper()
	u, err := url.Parse(dbURL)
	name := strings.TrimPrefix(u.Path, "/")
	if err != nil || !strings.HasPrefix(name, "hookbox_t_") {
		tb.Fatalf("not a database of pgtest.Database: %v", err)
	}
	return name
}

// admin runs sql on the test database named by base, failing tb on an error.
func admin(tb testing.TB, base, sql string) {
	tb.Helper()
	if err := exec(base, sql); err != nil {
		tb.Fatal(err)
	}
}

// exec runs sql on a connection of its own to the database named by base.
func exec(base, sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		return fmt.Errorf("connect to the test database: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}
