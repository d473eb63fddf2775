package bboltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

var idsT0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func idsEvent(id string, at time.Time) *app.Event {
	return &app.Event{Source: "shop", ID: id, Topic: "orders/create", ReceivedAt: at, Body: []byte(`{"id":"` + id + `"}`)}
}

// settle waits until db has applied every event it answered: tests that
// look at its in-memory state (the id index, the dictionary) look after
// the committer, which applies the intake log behind the answers.
func settle(t testing.TB, db *DB) {
	t.Helper()
	if err := db.caughtUp(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func openT(t *testing.T, dir string) *DB {
	t.Helper()
	db, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func accept(t *testing.T, db *DB, id string, at time.Time) bool {
	t.Helper()
	dup, err := db.Accept(context.Background(), idsEvent(id, at), at.Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	return dup
}

// With every id hashing alike, the index keeps all but one in its overflow
// map: no new id is taken for a duplicate, every resent one is, expired
// ones are swept and accepted again, and a reopened file rebuilds it all.
func TestIDIndex_Collisions(t *testing.T) {
	testIDHash = func([]byte) uint64 { return 42 }
	t.Cleanup(func() { testIDHash = nil })
	dir := t.TempDir()
	db := openT(t, dir)
	const n = 50
	for i := range n {
		if accept(t, db, fmt.Sprint("c-", i), idsT0) {
			t.Fatalf("new id c-%d taken for a duplicate", i)
		}
	}
	settle(t, db)
	if len(db.ids.over) != n-1 || len(db.ids.main) != 1 {
		t.Fatalf("index: %d in main, %d in over; want 1 and %d", len(db.ids.main), len(db.ids.over), n-1)
	}
	for i := range n {
		if !accept(t, db, fmt.Sprint("c-", i), idsT0.Add(time.Minute)) {
			t.Fatalf("resent id c-%d accepted again", i)
		}
		if _, _, ok, err := db.LookupID(context.Background(), "shop", fmt.Sprint("c-", i)); !ok || err != nil {
			t.Fatalf("LookupID(c-%d) = %v, %v", i, ok, err)
		}
	}
	db.Close()

	db = openT(t, dir) // rebuilt from the expiry index, collisions and all
	for i := range n {
		if !accept(t, db, fmt.Sprint("c-", i), idsT0.Add(2*time.Minute)) {
			t.Fatalf("after reopen, resent id c-%d accepted again", i)
		}
	}
	// Half expire: accepted again while not swept, then swept.
	for i := range n / 2 {
		if accept(t, db, fmt.Sprint("c-", i), idsT0.Add(2*time.Hour)) {
			t.Fatalf("expired id c-%d refused", i)
		}
	}
	if forgot, err := db.ForgetExpiredIDs(context.Background(), idsT0.Add(90*time.Minute), 1000); err != nil || forgot != n/2 {
		t.Fatalf("ForgetExpiredIDs = %d, %v; want %d", forgot, err, n/2)
	}
	for i := range n {
		dup := accept(t, db, fmt.Sprint("c-", i), idsT0.Add(2*time.Hour+time.Minute))
		if want := i < n/2; dup != want { // the re-accepted half is remembered anew
			t.Fatalf("c-%d at 2h01: duplicate %v, want %v", i, dup, want)
		}
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	db.Close()
}

// A data file from before the expiry index carried seqs (an ids bucket
// keyed by id) opens with every id still remembered, with its event.
func TestIDIndex_MigratesIDsBucket(t *testing.T) {
	for _, tc := range []struct {
		name string
		// interrupted leaves the file as a crash during an earlier start
		// would, or adds what the old layout may hold.
		interrupted func(t *testing.T, tx *bolt.Tx)
	}{
		{"fresh", nil},
		{"earlier build", func(t *testing.T, tx *bolt.Tx) { inPlace(t, tx, 3_000) }},
		{"resumed", func(t *testing.T, tx *bolt.Tx) {
			inPlace(t, tx, 3_000)
			copied(t, tx, 12_000)
		}},
		{"copied", func(t *testing.T, tx *bolt.Tx) {
			copied(t, tx, -1)
			mig := tx.Bucket(bucketMigrate)
			dst := mig.Bucket(bucketExpiry)
			dst.FillPercent = 1.0
			k, v := tx.Bucket(bucketIDs).Cursor().Seek(idKey("shop", "old-7")) // no expiry entry
			exp, seq, _ := parseIDValue(v)
			if err := dst.Put(timeKey(exp, k), seqKey(seq)); err != nil {
				t.Fatal(err)
			}
			if err := mig.Put(migrateCopied, nil); err != nil {
				t.Fatal(err)
			}
		}},
		{"orphans", func(t *testing.T, tx *bolt.Tx) {
			// More than a chunk of entries that remember nothing, first in
			// the index: a chunk that copies none must still move on.
			for i := range migrateChunk + 2_000 {
				k := timeKey(idsT0, idKey("shop", fmt.Sprint("gone-", i)))
				if err := tx.Bucket(bucketExpiry).Put(k, nil); err != nil {
					t.Fatal(err)
				}
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testMigratesIDsBucket(t, tc.interrupted) })
	}
}

// oldSeq is the seq an old expiry entry k takes: its id record's, when
// that record has k's expiry.
func oldSeq(tx *bolt.Tx, k []byte) (uint64, bool) {
	rec := tx.Bucket(bucketIDs).Get(k[8:])
	if rec == nil {
		return 0, false
	}
	exp, seq, err := parseIDValue(rec)
	return seq, err == nil && exp.Equal(time.Unix(0, int64(binary.BigEndian.Uint64(k))))
}

// inPlace does what an earlier build's migration did to the first n
// entries before a crash: their seqs in place, their id records gone.
func inPlace(t *testing.T, tx *bolt.Tx, n int) {
	var keys [][]byte
	c := tx.Bucket(bucketExpiry).Cursor()
	for k, _ := c.First(); k != nil && len(keys) < n; k, _ = c.Next() {
		if _, ok := oldSeq(tx, k); ok {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	for _, k := range keys {
		seq, _ := oldSeq(tx, k)
		if err := tx.Bucket(bucketExpiry).Put(k, seqKey(seq)); err != nil {
			t.Fatal(err)
		}
		if err := tx.Bucket(bucketIDs).Delete(k[8:]); err != nil {
			t.Fatal(err)
		}
	}
}

// copied does what migrateIDs does before a crash: the first n old
// entries (all when n < 0) read, those that remember something copied.
func copied(t *testing.T, tx *bolt.Tx, n int) {
	mig, _ := tx.CreateBucket(bucketMigrate)
	dst, _ := mig.CreateBucket(bucketExpiry)
	dst.FillPercent = 1.0
	c := tx.Bucket(bucketExpiry).Cursor()
	var last []byte
	for k, v := c.First(); k != nil && n != 0; k, v = c.Next() {
		n--
		last = k
		seq, ok := oldSeq(tx, k)
		if len(v) == 8 {
			seq, ok = binary.BigEndian.Uint64(v), true
		}
		if ok {
			if err := dst.Put(k, seqKey(seq)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := mig.Put(migrateLast, last); err != nil {
		t.Fatal(err)
	}
}

func testMigratesIDsBucket(t *testing.T, interrupted func(*testing.T, *bolt.Tx)) {
	dir := t.TempDir()
	bdb, err := bolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	const n = 25_000 // more than two migration chunks
	// Expiries follow arrival, which is not the order of the ids.
	exp := func(i int) time.Time { return idsT0.Add(time.Hour + time.Duration(i*7919%n)*time.Millisecond) }
	err = bdb.Update(func(tx *bolt.Tx) error {
		ids, _ := tx.CreateBucket(bucketIDs)
		expiry, _ := tx.CreateBucket(bucketExpiry)
		events, _ := tx.CreateBucket(bucketEvents)
		for i := range n {
			e := idsEvent(fmt.Sprint("old-", i), idsT0)
			seq, _ := events.NextSequence()
			key := idKey(e.Source, e.ID)
			if err := events.Put(seqKey(seq), encodeEvent(e)); err != nil {
				return err
			}
			if err := ids.Put(key, idValue(exp(i), seq)); err != nil {
				return err
			}
			if i == 7 { // an id record whose expiry entry is missing still counts
				continue
			}
			if err := expiry.Put(timeKey(exp(i), key), nil); err != nil {
				return err
			}
		}
		// Entries that remember nothing: without an id record, and one
		// whose id record has another expiry.
		if err := expiry.Put(timeKey(exp(0), idKey("shop", "orphan")), nil); err != nil {
			return err
		}
		return expiry.Put(timeKey(exp(1).Add(-time.Minute), idKey("shop", "old-1")), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if interrupted != nil {
		if err := bdb.Update(func(tx *bolt.Tx) error { interrupted(t, tx); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	bdb.Close()

	db := openT(t, dir)
	defer db.Close()
	for _, i := range []int{0, 1, 7, 2_999, 3_000, 9_999, 10_000, 24_999} {
		id := fmt.Sprint("old-", i)
		got, seq, ok, err := db.LookupID(context.Background(), "shop", id)
		if !ok || err != nil || !got.Equal(exp(i)) {
			t.Fatalf("LookupID(%s) = %v %d %v %v; want expiry %v", id, got, seq, ok, err, exp(i))
		}
		if e, err := db.Event(context.Background(), seq); err != nil || e == nil || e.ID != id {
			t.Fatalf("event %d of %s: %+v, %v", seq, id, e, err)
		}
		if !accept(t, db, id, idsT0.Add(time.Minute)) {
			t.Fatalf("migrated id %s accepted again", id)
		}
	}
	if _, _, ok, _ := db.LookupID(context.Background(), "shop", "orphan"); ok {
		t.Error("an expiry entry without an id record is remembered")
	}
	if ids, _, _ := db.Counts(context.Background()); ids != n {
		t.Fatalf("%d ids remembered, want %d", ids, n)
	}
	db.db().View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketIDs) != nil || tx.Bucket(bucketMigrate) != nil {
			t.Error("the ids or the migrate bucket is still there")
		}
		// Written in key order, the index's pages are full: a cold start
		// reads as few of them as it can.
		st := tx.Bucket(bucketExpiry).Stats()
		if use := float64(st.LeafInuse) / float64(st.LeafPageN*tx.DB().Info().PageSize); use < 0.9 {
			t.Errorf("expiry index leaves %.0f%% used (%d pages for %d keys), want ≥ 90%%", 100*use, st.LeafPageN, st.KeyN)
		}
		return nil
	})
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
}

// Colliding ids accepted concurrently, each twice (the second time after
// its first expiry, so it is accepted again), often within one group
// commit: afterwards every id is still remembered and is a duplicate.
func TestIDIndex_CollisionsConcurrent(t *testing.T) {
	testIDHash = func(key []byte) uint64 { return uint64(len(key) % 3) } // three slots for all
	t.Cleanup(func() { testIDHash = nil })
	db := openT(t, t.TempDir())
	defer db.Close()
	const n = 200
	errs := make(chan error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		for round := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				at := idsT0.Add(time.Duration(round) * 2 * time.Second) // round 1: after round 0's expiry
				e := idsEvent(fmt.Sprint("k-", i), at)
				if _, err := db.Accept(context.Background(), e, at.Add(time.Second+time.Duration(round)*time.Hour), nil); err != nil {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range n {
		if !accept(t, db, fmt.Sprint("k-", i), idsT0.Add(3*time.Second)) {
			t.Fatalf("k-%d accepted a third time", i)
		}
	}
	settle(t, db) // the index holds what the committer applied
	db.ids.mu.RLock()
	defer db.ids.mu.RUnlock()
	if got := len(db.ids.main) + len(db.ids.over); got != n {
		t.Fatalf("index holds %d entries for %d ids", got, n)
	}
}
