package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"slices"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Remembered ids live durably in one bucket, the expiry index: key
// expiry(8) source\x00id, value the event's seq(8). Its keys are ordered by
// time, so a commit of new ids writes the pages at its right edge and the
// sweep deletes from its left edge.
//
// Looking an id up by its name goes through idIndex, an in-memory hash of
// every remembered key to its expiry, rebuilt from the expiry index at Open.
// A B+tree keyed by the ids themselves (hookbox's layout until 2026-11-30)
// put every new id on a random page: with senders' random ids that was one
// more page written per event, half again the commit's pages
// (BENCHMARKS.md). The index only says where to look: every hit is
// confirmed against the expiry index in the transaction at hand.
// Each remembered key is in exactly one of main and over, and main holds
// at most one key per hash: so a key not in over whose hash slot's expiry
// has an entry for it in the expiry index is that slot's owner.
type idIndex struct {
	seed maphash.Seed
	hash func(key []byte) uint64
	mu   sync.RWMutex
	main map[uint64]int64 // hash of key → expiry (UnixNano)
	// over holds the keys whose hash slot in main belongs to another key
	// (a 64-bit collision: in practice empty).
	over    map[string]int64
	sources map[string]bool // every source with a remembered id, for findByID
}

func newIDIndex() *idIndex {
	x := &idIndex{seed: maphash.MakeSeed(), main: map[uint64]int64{}, over: map[string]int64{}, sources: map[string]bool{}}
	x.hash = func(key []byte) uint64 { return maphash.Bytes(x.seed, key) }
	if testIDHash != nil {
		x.hash = testIDHash
	}
	return x
}

// testIDHash, set by tests, replaces the index's hash (to force collisions).
var testIDHash func(key []byte) uint64

// expiryEntry returns the value (the event's seq) of the expiry index
// entry for key with expiry exp in tx, or nil when there is none.
func expiryEntry(tx *bolt.Tx, exp int64, key []byte) []byte {
	return tx.Bucket(bucketExpiry).Get(nanoKey(exp, key))
}

// find returns the expiry of key and its expiry index entry's value when
// tx's expiry index remembers it, expired or not.
func (x *idIndex) find(tx *bolt.Tx, key []byte) (exp int64, entry []byte, ok bool) {
	h := x.hash(key)
	x.mu.RLock()
	e, inMain := x.main[h]
	o, inOver := x.over[string(key)]
	x.mu.RUnlock()
	if inOver {
		if v := expiryEntry(tx, o, key); v != nil {
			return o, v, true
		}
	}
	if inMain {
		if v := expiryEntry(tx, e, key); v != nil {
			return e, v, true
		}
	}
	return 0, nil, false
}

// placeOver tells whether key, about to be remembered in tx, must go to
// over: its hash slot is held by another remembered key, or by another
// key added earlier in the same transaction (pendingMain).
func (x *idIndex) placeOver(tx *bolt.Tx, key []byte, pendingMain map[uint64]bool) bool {
	h := x.hash(key)
	x.mu.RLock()
	e, inMain := x.main[h]
	_, inOver := x.over[string(key)]
	x.mu.RUnlock()
	return inOver || pendingMain[h] || inMain && expiryEntry(tx, e, key) == nil
}

// txID is a key the running transaction added: its expiry and its place.
type txID struct {
	exp  int64
	over bool
}

// add records that key is remembered until exp, once its commit is durable.
func (x *idIndex) add(key []byte, exp int64, over bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.addLocked(key, exp, over)
}

// addLocked is add with x.mu held.
func (x *idIndex) addLocked(key []byte, exp int64, over bool) {
	if over {
		x.over[string(key)] = exp
	} else {
		delete(x.over, string(key)) // never in both
		x.main[x.hash(key)] = exp
	}
	if src, _, ok := bytes.Cut(key, []byte{0}); ok && !x.sources[string(src)] {
		x.sources[string(src)] = true
	}
}

// remove forgets key's entry with expiry exp, once its deletion is durable.
// An entry with another expiry is a newer acceptance of the key, or
// another key's, and stays.
func (x *idIndex) remove(key []byte, exp int64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if e, ok := x.over[string(key)]; ok {
		if e == exp {
			delete(x.over, string(key))
		}
		return // a key in over owns no slot in main
	}
	h := x.hash(key)
	if e, ok := x.main[h]; ok && e == exp {
		delete(x.main, h)
	}
}

// lookup returns key's expiry from the index alone, unconfirmed: a hint
// for the read path, which confirms it.
func (x *idIndex) lookup(key []byte) (exp int64, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if e, ok := x.over[string(key)]; ok {
		return e, true
	}
	e, ok := x.main[x.hash(key)]
	return e, ok
}

func (x *idIndex) len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.main) + len(x.over)
}

// sourceList returns the sources with a remembered id, sorted.
func (x *idIndex) sourceList() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return slices.Sorted(maps.Keys(x.sources))
}

// loadRelease is how many keys a part of load reads between two releases
// of the map's pages (releaseMap).
const loadRelease = 1 << 14

// loadParts is how many parts of the expiry index load reads at once. Its
// pages lie between the events' pages they were written with, and from
// disk each is a read of its own (bbolt maps the file MADV_RANDOM): with
// one reader a cold start waited on them one at a time.
const loadParts = 8

// load builds the index from db's expiry index, which holds each key once
// (Accept deletes a key's expired entry when it accepts the key again),
// reading loadParts ranges of expiry times at once, each in a read
// transaction of its own (no writer runs while Open loads).
func (x *idIndex) load(db *bolt.DB) error {
	var lo, hi uint64
	err := db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketExpiry).Cursor()
		first, _ := c.First()
		last, _ := c.Last()
		if first == nil {
			return nil
		}
		if len(first) < 9 || len(last) < 9 {
			return fmt.Errorf("expiry keys %x, %x: %w", first, last, errCorrupt)
		}
		lo, hi = binary.BigEndian.Uint64(first), binary.BigEndian.Uint64(last)
		return nil
	})
	if err != nil || lo == 0 && hi == 0 {
		return err
	}
	step := (hi - lo) / loadParts
	errs := make([]error, loadParts)
	var wg sync.WaitGroup
	for i := range loadParts {
		from, to := lo+step*uint64(i), lo+step*uint64(i+1)
		if i == 0 {
			from = 0
		}
		if i == loadParts-1 {
			to = ^uint64(0)
		}
		wg.Go(func() { errs[i] = db.View(func(tx *bolt.Tx) error { return x.loadPart(tx, from, to) }) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// loadPart adds the keys of tx's expiry index whose expiry is in
// [from, to), to inclusive when it is the largest.
func (x *idIndex) loadPart(tx *bolt.Tx, from, to uint64) error {
	type entry struct {
		key []byte // in bbolt's map: valid in tx
		exp int64
	}
	batch := make([]entry, 0, 1024)
	flush := func() {
		x.mu.Lock()
		for _, e := range batch {
			_, taken := x.main[x.hash(e.key)]
			x.addLocked(e.key, e.exp, taken)
		}
		x.mu.Unlock()
		batch = batch[:0]
	}
	c := tx.Bucket(bucketExpiry).Cursor()
	n := 0
	for k, _ := c.Seek(binary.BigEndian.AppendUint64(nil, from)); k != nil; k, _ = c.Next() {
		if n++; n%loadRelease == 0 {
			releaseMap(tx) // the pages read so far, and those mapped around them
		}
		if len(k) < 9 {
			return fmt.Errorf("expiry key %x: %w", k, errCorrupt)
		}
		exp := binary.BigEndian.Uint64(k)
		if exp >= to && to != ^uint64(0) {
			break
		}
		if batch = append(batch, entry{k[8:], int64(exp)}); len(batch) == cap(batch) {
			flush()
		}
	}
	flush()
	return nil
}

// migrateIDs moves a data file from the ids bucket (source\x00id →
// expiry(8) seq(8), hookbox until 2026-11-30) to the expiry index with
// seqs. It rebuilds the expiry index in key order into a new bucket with
// full pages, chunk by chunk so that a large file never needs one huge
// transaction (a crash between chunks resumes after the last entry read),
// then puts it in the old one's place. Giving the old entries their seqs in
// place, in the ids bucket's order, split pages all over the index: 1M
// upgraded ids took 83,642 leaf pages at 18% use, and a start with a cold
// cache read them all (5.3 s).
func migrateIDs(db *bolt.DB) error {
	for {
		var done bool
		err := db.Update(func(tx *bolt.Tx) error {
			ids := tx.Bucket(bucketIDs)
			if ids == nil {
				done = true
				return nil
			}
			mig, err := tx.CreateBucketIfNotExists(bucketMigrate)
			if err != nil {
				return err
			}
			if mig.Get(migrateCopied) != nil {
				// bbolt's MoveBucket moves a bucket as last committed, so
				// the new index is put in place in a transaction of its own.
				done = true
				for _, err := range []error{
					tx.DeleteBucket(bucketExpiry),
					tx.MoveBucket(bucketExpiry, mig, nil),
					tx.DeleteBucket(bucketMigrate),
					tx.DeleteBucket(bucketIDs),
				} {
					if err != nil {
						return err
					}
				}
				return nil
			}
			dst, err := mig.CreateBucketIfNotExists(bucketExpiry)
			if err != nil {
				return err
			}
			dst.FillPercent = 1.0 // it is written in key order
			src := tx.Bucket(bucketExpiry).Cursor()
			k, v := src.First()
			if last := mig.Get(migrateLast); last != nil { // resume
				if k, v = src.Seek(last); bytes.Equal(k, last) {
					k, v = src.Next()
				}
			}
			var last []byte
			for n := 0; k != nil && n < migrateChunk; k, v = src.Next() {
				n++
				last = k
				seq, ok, err := migratedSeq(ids, k, v)
				if err != nil {
					return err
				}
				if ok {
					if err := dst.Put(k, seqKey(seq)); err != nil {
						return err
					}
				}
			}
			if k != nil { // the next chunk in the next transaction
				return mig.Put(migrateLast, last)
			}
			// An id record whose expiry entry was missing still counts.
			c := ids.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				exp, seq, err := parseIDValue(v)
				if err != nil {
					return fmt.Errorf("id record %q: %w", k, err)
				}
				if ek := timeKey(exp, k); dst.Get(ek) == nil {
					if err := dst.Put(ek, seqKey(seq)); err != nil {
						return err
					}
				}
			}
			return mig.Put(migrateCopied, nil)
		})
		if err != nil {
			return fmt.Errorf("move remembered ids to the expiry index: %w", err)
		}
		if done {
			return nil
		}
	}
}

const migrateChunk = 10_000

// migratedSeq returns the seq an old expiry entry (k, v) takes in the new
// index, and false for an entry that remembers nothing: one the old layout
// had no id record for, or whose id record has another expiry.
func migratedSeq(ids *bolt.Bucket, k, v []byte) (uint64, bool, error) {
	if len(k) < 9 {
		return 0, false, fmt.Errorf("expiry key %x: %w", k, errCorrupt)
	}
	if len(v) == 8 { // given its seq by an earlier build's migration
		return binary.BigEndian.Uint64(v), true, nil
	}
	rec := ids.Get(k[8:])
	if rec == nil {
		return 0, false, nil
	}
	exp, seq, err := parseIDValue(rec)
	if err != nil {
		return 0, false, fmt.Errorf("id record %q: %w", k[8:], err)
	}
	return seq, exp.UnixNano() == int64(binary.BigEndian.Uint64(k)), nil
}

// bucketMigrate holds, while migrateIDs runs, the expiry index it builds
// (its child named like the index it replaces), the last old entry it
// went through (migrateLast: entries that remember nothing are not
// copied, so the new index's last key is not where to resume), and
// migrateCopied once every id is in it.
var (
	bucketMigrate = []byte("migrate")
	migrateLast   = []byte("last")
	migrateCopied = []byte("copied")
)

// bucketIDs is the bucket of remembered ids of data files written before
// the expiry index carried seqs; Open moves it (migrateIDs).
var bucketIDs = []byte("ids")

// expirySeq returns the seq stored with an expiry index entry.
func expirySeq(v []byte) (uint64, error) {
	if len(v) != 8 {
		return 0, fmt.Errorf("expiry entry value %x: %w", v, errCorrupt)
	}
	return binary.BigEndian.Uint64(v), nil
}

// ForgetExpiredIDs forgets at most limit ids whose expiry is at or before
// now. It reads the expiry index from its start, so its cost grows with
// what expired, not with what is stored. It goes through the committer,
// which keeps the id index in step.
func (d *DB) ForgetExpiredIDs(ctx context.Context, now time.Time, limit int) (int, error) {
	d.caughtUp(ctx) // the sweep sees every event answered before it
	var keys [][]byte
	err := d.updateTx(ctx, func(tx *bolt.Tx, _ *txState) error {
		keys = keys[:0]
		exp := tx.Bucket(bucketExpiry)
		end := uint64(now.UnixNano())
		c := exp.Cursor()
		for k, _ := c.First(); k != nil && len(keys) < limit; k, _ = c.Next() {
			if len(k) < 8 || binary.BigEndian.Uint64(k) > end {
				break
			}
			keys = append(keys, append([]byte(nil), k...))
		}
		// Delete after iterating: deleting under a cursor skips keys.
		for _, k := range keys {
			if err := exp.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}, func(*txState) {
		for _, k := range keys {
			d.ids.remove(k[8:], int64(binary.BigEndian.Uint64(k)))
		}
	})
	if err != nil {
		return 0, fmt.Errorf("forget expired ids: %w", err)
	}
	return len(keys), nil
}
