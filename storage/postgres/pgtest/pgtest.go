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
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Fatalf("connect to the test database: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
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
