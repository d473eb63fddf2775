package bboltstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/storage/bboltstore"
)

// Open reads every remembered id through bbolt's map; it gives those
// pages back before it returns, so a large data file does not stay in the
// process's resident set (issue 47: idle RSS with 1,000,000 stored events).
// Without it the expiry index and the cached pages the kernel maps around
// each page read stayed resident: 6.9 MB of this 7.3 MB file.
func TestOpen_GivesBackTheMap(t *testing.T) {
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	body := []byte(strings.Repeat(`{"order":{"id":1,"line_items":[{"sku":"A-1"}]}}`, 4))
	const n = 30000
	inParallel(t, n, func(i int) error {
		e := &app.Event{Source: "shop", ID: randomID(uint64(i)), Topic: "orders/create", ReceivedAt: t0, Body: body}
		_, err := db.Accept(context.Background(), e, t0.Add(time.Duration(i)*time.Millisecond+time.Hour), nil)
		return err
	})
	db.Close()
	path := filepath.Join(dir, bboltstore.FileName)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	db = mustOpenDir(t, dir)
	rss := mappedRSS(t, path)
	// (Counts walks the events' pages: after the measure.)
	if ids, _, err := db.Counts(context.Background()); err != nil || ids != n {
		t.Fatalf("%d ids remembered after open, %v; want %d", ids, err, n)
	}
	t.Logf("file %d KiB, %d KiB of it resident after open", fi.Size()>>10, rss>>10)
	if rss > 1<<20 {
		t.Errorf("%d KiB of the %d KiB data file resident after open; want at most 1 MiB", rss>>10, fi.Size()>>10)
	}
}

// mappedRSS is the resident size of this process's maps of the file at
// path.
func mappedRSS(t *testing.T, path string) int64 {
	t.Helper()
	n, err := apptest.MappedRSS("/proc/self/smaps", path)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An open store gives back, every releaseEvery, the map's pages that its
// reads and commits touched since: here a walk of every event's page
// (Counts) leaves none of them resident once a release has run. Without
// it they stayed, and under 64 connections' load the commits left 130 MB
// of a 1,000,000-event file resident in 20 s.
func TestStore_GivesBackTouchedPages(t *testing.T) {
	was := bboltstore.SetReleaseEvery(20 * time.Millisecond)
	t.Cleanup(func() { bboltstore.SetReleaseEvery(was) })
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	body := []byte(strings.Repeat(`{"order":{"id":1,"line_items":[{"sku":"A-1"}]}}`, 4))
	inParallel(t, 20000, func(i int) error {
		e := &app.Event{Source: "shop", ID: randomID(uint64(i)), Topic: "orders/create", ReceivedAt: t0, Body: body}
		_, err := db.Accept(context.Background(), e, t0.Add(time.Hour), nil)
		return err
	})
	path := filepath.Join(dir, bboltstore.FileName)
	if _, events, err := db.Counts(context.Background()); err != nil || events != 20000 {
		t.Fatalf("%d events, %v", events, err)
	}
	apptest.Until(t, 10*time.Second, func() error {
		if rss := mappedRSS(t, path); rss > 1<<20 {
			return fmt.Errorf("%d KiB of the data file still resident", rss>>10)
		}
		return nil
	})
}

// Open loads the remembered ids in parts by expiry time, at once: every
// id comes back whichever part its expiry falls in, those sharing an
// expiry at a part's edge included.
func TestOpen_LoadsEveryIDInParts(t *testing.T) {
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	const n = 5000
	exp := func(i int) time.Time { return t0.Add(time.Hour + time.Duration(i/7)*time.Second) } // seven ids an expiry
	inParallel(t, n, func(i int) error {
		i--
		_, err := db.Accept(context.Background(), newEvent("shop", randomID(uint64(i)), t0), exp(i), nil)
		return err
	})
	db.Close()
	db = mustOpenDir(t, dir)
	if ids, _, err := db.Counts(context.Background()); err != nil || ids != n {
		t.Fatalf("%d ids after open, %v; want %d", ids, err, n)
	}
	for i := range n {
		got, _, ok, err := db.LookupID(context.Background(), "shop", randomID(uint64(i)))
		if err != nil || !ok || !got.Equal(exp(i)) {
			t.Fatalf("id %d: %v %v %v; want remembered until %v", i, got, ok, err, exp(i))
		}
	}
}
