package storage_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// MustOpenDB opens a fresh data file in a temp dir and closes it at the end.
func MustOpenDB(tb testing.TB) *storage.DB {
	tb.Helper()
	return mustOpenDir(tb, tb.TempDir())
}

func mustOpenDir(tb testing.TB, dir string) *storage.DB {
	tb.Helper()
	db, err := storage.Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func newEvent(source, id string, at time.Time) *app.Event {
	return &app.Event{
		Source: source, ID: id, Topic: "orders/create", ReceivedAt: at,
		Header: []app.HeaderField{{Name: "X-Shopify-Topic", Value: "orders/create"}, {Name: "Content-Type", Value: "application/json"}},
		Body:   []byte(`{"id": 1, "note": "a/b & <c>"}` + "\n"),
	}
}

func TestDB_Accept(t *testing.T) {
	ctx := context.Background()
	t.Run("OK", func(t *testing.T) {
		db := MustOpenDB(t)
		e := newEvent("shop", "evt_1", t0)
		dup, err := db.Accept(ctx, e, t0.Add(time.Hour), nil)
		if err != nil || dup {
			t.Fatalf("Accept = %v, %v; want false, nil", dup, err)
		}
		if e.Seq == 0 {
			t.Fatal("Seq not assigned")
		}
		got, err := db.Event(e.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Body) != string(e.Body) || got.ID != "evt_1" || got.Source != "shop" || got.Topic != "orders/create" {
			t.Fatalf("stored event = %+v, want %+v", got, e)
		}
		if !got.ReceivedAt.Equal(t0) || len(got.Header) != 2 || got.Header[1].Value != "application/json" {
			t.Fatalf("stored event = %+v", got)
		}
		exp, seq, ok, err := db.LookupID("shop", "evt_1")
		if err != nil || !ok || seq != e.Seq || !exp.Equal(t0.Add(time.Hour)) {
			t.Fatalf("LookupID = %v %d %v %v", exp, seq, ok, err)
		}
	})
	t.Run("Duplicate", func(t *testing.T) {
		db := MustOpenDB(t)
		if _, err := db.Accept(ctx, newEvent("shop", "evt_1", t0), t0.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
		e := newEvent("shop", "evt_1", t0.Add(time.Minute))
		dup, err := db.Accept(ctx, e, t0.Add(time.Hour+time.Minute), nil)
		if err != nil || !dup {
			t.Fatalf("Accept = %v, %v; want duplicate", dup, err)
		}
		if _, events, _ := db.Counts(); events != 1 {
			t.Fatalf("events = %d, want 1", events)
		}
	})
	t.Run("SameIDOtherSource", func(t *testing.T) {
		db := MustOpenDB(t)
		for _, src := range []string{"shop", "shop2"} {
			if dup, err := db.Accept(ctx, newEvent(src, "evt_1", t0), t0.Add(time.Hour), nil); err != nil || dup {
				t.Fatalf("%s: Accept = %v, %v", src, dup, err)
			}
		}
	})
	t.Run("ExpiredNotYetSwept", func(t *testing.T) {
		db := MustOpenDB(t)
		if _, err := db.Accept(ctx, newEvent("shop", "evt_1", t0), t0.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
		later := t0.Add(2 * time.Hour)
		if dup, err := db.Accept(ctx, newEvent("shop", "evt_1", later), later.Add(time.Hour), nil); err != nil || dup {
			t.Fatalf("Accept after expiry = %v, %v; want accepted", dup, err)
		}
		// The old expiry entry went with it: sweeping at the old expiry keeps the id.
		if n, err := db.ForgetExpiredIDs(t0.Add(90*time.Minute), 100); err != nil || n != 0 {
			t.Fatalf("ForgetExpiredIDs = %d, %v; want 0", n, err)
		}
		if _, _, ok, _ := db.LookupID("shop", "evt_1"); !ok {
			t.Fatal("id forgotten too early")
		}
	})
	t.Run("ErrClosed", func(t *testing.T) {
		db, err := storage.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		db.Close()
		if _, err := db.Accept(ctx, newEvent("shop", "x", t0), t0.Add(time.Hour), nil); err == nil {
			t.Fatal("Accept on a closed DB succeeded")
		}
	})
}

// Two concurrent deliveries of one id cannot both be accepted.
func TestDB_Accept_Concurrent(t *testing.T) {
	db := MustOpenDB(t)
	var accepted, dups atomic.Int64
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := newEvent("shop", "evt_same", t0.Add(time.Duration(i)*time.Millisecond))
			dup, err := db.Accept(context.Background(), e, t0.Add(time.Hour), nil)
			switch {
			case err != nil:
				t.Error(err)
			case dup:
				dups.Add(1)
			default:
				accepted.Add(1)
			}
		}()
	}
	wg.Wait()
	if accepted.Load() != 1 || dups.Load() != 99 {
		t.Fatalf("accepted %d, duplicates %d; want 1, 99", accepted.Load(), dups.Load())
	}
	if _, events, _ := db.Counts(); events != 1 {
		t.Fatalf("events stored = %d, want 1", events)
	}
}

func TestDB_Reopen(t *testing.T) {
	dir := t.TempDir()
	db, err := storage.Open(dir)
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
	_, err := storage.Open(dir)
	if !errors.Is(err, storage.ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("second Open waited %v", d) // generous: only proves it does not hang
	}
}

// acceptMany accepts n distinct ids for source, expiring at exp.
func acceptMany(tb testing.TB, db *storage.DB, source string, n int, exp time.Time) {
	inParallel(tb, n, func(i int) error {
		_, err := db.Accept(context.Background(), newEvent(source, fmt.Sprintf("evt_%d", i), t0), exp, nil)
		return err
	})
}

// inParallel calls f(1) … f(n) from 64 goroutines, so that group commit
// keeps a fill quick; a goroutine stops at its first error, which fails tb.
func inParallel(tb testing.TB, n int, f func(i int) error) {
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 64 {
		wg.Go(func() {
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				if err := f(i); err != nil {
					tb.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestDB_ForgetExpiredIDs(t *testing.T) {
	if testing.Short() {
		t.Skip("accepts 100k events")
	}
	db := MustOpenDB(t)
	const expired, kept, chunk = 100_000, 500, 5000
	acceptMany(t, db, "old", expired, t0.Add(time.Hour))
	acceptMany(t, db, "new", kept, t0.Add(48*time.Hour))

	now := t0.Add(2 * time.Hour)
	var chunks, total int
	for {
		n, err := db.ForgetExpiredIDs(now, chunk)
		if err != nil {
			t.Fatal(err)
		}
		if n > chunk {
			t.Fatalf("one call forgot %d ids, limit %d", n, chunk)
		}
		total += n
		chunks++
		if n < chunk {
			break
		}
	}
	if total != expired || chunks != expired/chunk+1 {
		t.Fatalf("forgot %d ids in %d chunks; want %d in %d", total, chunks, expired, expired/chunk+1)
	}
	ids, _, err := db.Counts()
	if err != nil || ids != kept {
		t.Fatalf("ids left = %d (%v), want %d", ids, err, kept)
	}
	// A forgotten id is accepted again.
	dup, err := db.Accept(context.Background(), newEvent("old", "evt_7", now), now.Add(time.Hour), nil)
	if err != nil || dup {
		t.Fatalf("re-accept after sweep = %v, %v", dup, err)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

func TestDB_DeleteEventsBefore(t *testing.T) {
	db := MustOpenDB(t)
	ctx := context.Background()
	for i := range 10 {
		at := t0.Add(time.Duration(i) * time.Minute)
		if _, err := db.Accept(ctx, newEvent("shop", fmt.Sprint(i), at), at.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.DeleteEventsBefore(t0.Add(5*time.Minute), 3)
	if err != nil || n != 3 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 3 (the limit)", n, err)
	}
	n, err = db.DeleteEventsBefore(t0.Add(5*time.Minute), 100)
	if err != nil || n != 2 {
		t.Fatalf("DeleteEventsBefore = %d, %v; want 2", n, err)
	}
	if _, events, _ := db.Counts(); events != 5 {
		t.Fatalf("events left = %d, want 5", events)
	}
	// Ids outlive their events: still duplicates.
	if dup, _ := db.Accept(ctx, newEvent("shop", "0", t0.Add(6*time.Minute)), t0.Add(2*time.Hour), nil); !dup {
		t.Fatal("id of a deleted event was accepted again")
	}
}
