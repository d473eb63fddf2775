package bboltstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/bboltstore"
	"hookbox/storage/storetest"
)

// MustOpenDB opens a fresh data file in a temp dir and closes it at the end.
func MustOpenDB(tb testing.TB) *bboltstore.DB {
	tb.Helper()
	return mustOpenDir(tb, tb.TempDir())
}

func mustOpenDir(tb testing.TB, dir string) *bboltstore.DB {
	tb.Helper()
	db, err := bboltstore.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// t0 and newEvent are the conformance suite's (storage/storetest), where
// the behaviour both stores share is tested.
var t0 = storetest.T0

func newEvent(source, id string, at time.Time) *app.Event { return storetest.NewEvent(source, id, at) }

// never skips no delivery.
var never = storetest.Never

func TestDB_Reopen(t *testing.T) {
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Accept(context.Background(), newEvent("shop", "evt_1", t0), t0.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpenDir(t, dir)
	dup, err := db.Accept(context.Background(), newEvent("shop", "evt_1", t0.Add(time.Minute)), t0.Add(2*time.Hour), nil)
	if err != nil || !dup {
		t.Fatalf("after reopen Accept = %v, %v; want duplicate", dup, err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestOpen_Locked(t *testing.T) {
	dir := t.TempDir()
	mustOpenDir(t, dir)
	start := time.Now()
	_, err := bboltstore.Open(dir)
	if !errors.Is(err, bboltstore.ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("second Open waited %v", d) // generous: only proves it does not hang
	}
}

// acceptMany accepts n distinct ids for source, expiring at exp.
func acceptMany(tb testing.TB, db *bboltstore.DB, source string, n int, exp time.Time) {
	inParallel(tb, n, func(i int) error {
		_, err := db.Accept(context.Background(), newEvent(source, fmt.Sprintf("evt_%d", i), t0), exp, nil)
		return err
	})
}

// inParallel is storetest.InParallel: f(1) … f(n) from 64 goroutines.
func inParallel(tb testing.TB, n int, f func(i int) error) { storetest.InParallel(tb, n, f) }
