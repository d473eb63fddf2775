// Package bboltstore keeps hookbox's state (app.Store) in one bbolt file: the
// remembered event ids with their expiry index, the events, their
// deliveries and attempts, the debounced pending deliveries, the counts and
// the records set aside. Every write that backs an answer to a sender is
// committed with fsync before it returns.
package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"hookbox/app"
	"hookbox/app/datadir"
	"hookbox/storage"
)

var _ storage.Store = (*DB)(nil)

// Bucket names. Keys are documented where they are built (encoding.go).
var (
	bucketExpiry = []byte("expiry") // expiry(8) source\x00id → seq(8): the remembered ids (ids.go)
	bucketEvents = []byte("events") // seq(8) → encoded event
)

// FileName is the name of the bbolt file inside the data directory.
const FileName = "hookbox.db"

// ErrLocked means another process holds the data file.
var ErrLocked = errors.New("data file is locked by another process (is hookbox already running?)")

// LockName is the lock file in the data directory that serve and restore
// hold while they run (see lockDir).
const LockName = "hookbox.lock"

// DB is the bbolt-backed implementation of app.Store.
type DB struct {
	db     *bolt.DB
	path   string
	unlock func() // releases the data directory's lock (lockDir)

	queue     chan write    // writes waiting for the committer
	closing   chan struct{} // closed by Close once no write is in flight
	stopped   chan struct{} // closed when the committer has returned
	mu        sync.RWMutex  // guards closed
	closed    bool
	inflight  sync.WaitGroup // writes between their check of closed and their answer
	lingerGap time.Duration  // see gather
	lingerMax time.Duration
	commits   atomic.Uint64 // see CommitCounts
	writes    atomic.Uint64

	ids      *idIndex // remembered ids by name (ids.go)
	onOpened atomic.Pointer[func()]
	onCommit atomic.Pointer[func(error)] // see OnCommit
	counts   *counter                    // hourly counts not written yet (counts.go)
}

var (
	_ app.Store     = (*DB)(nil)
	_ app.ReadModel = (*DB)(nil)
)

// Open opens (creating if needed) the data file in dir. It fails within a
// second with ErrLocked when another process holds the file.
func Open(dir string) (*DB, error) {
	if err := makeDir(dir); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	// Every name in the directory is taken relative to it held open, never
	// through a link, never waiting on a FIFO, and a file made is its
	// owner's: root opens it too (hookbox passwd on a stopped server), in a
	// directory the service user owns and may change meanwhile.
	dd, err := datadir.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("open data dir %s: %w", dir, err)
	}
	defer dd.Close()
	// The directory's lock first, then the file: a restore holds the
	// former while it replaces the latter. A running hookbox holds it too,
	// so what inspect finds below is never a file being written.
	unlock, err := lockDir(dd, time.Second)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := inspect(dd); err != nil {
		unlock()
		return nil, err
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, InitialMmapSize: initialMmapSize, NoSync: brokenNoSync,
		OpenFile: func(_ string, flag int, perm os.FileMode) (*os.File, error) { return dd.OpenFile(FileName, flag, perm) }})
	if err != nil {
		unlock()
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("open %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// bbolt syncs a new file's pages, not its name: without a sync of the
	// directory a power cut after the first commits can take the whole
	// file (TestPowerLoss_FirstStart).
	if err := dd.Sync(); err != nil {
		bdb.Close()
		unlock()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	older, err := checkFormat(bdb, path)
	if err != nil {
		bdb.Close()
		unlock()
		return nil, err
	}
	err = bdb.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketExpiry, bucketEvents, bucketDeliveries, bucketDue, bucketDead, bucketAttempts, bucketEventDlv, bucketPending, bucketPendingDue, bucketWindow, bucketMerged, bucketPendingEvent, bucketPoison, bucketCounts, bucketNamed, bucketLast} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = migrateIDs(bdb)
	}
	if err == nil {
		err = reindexPending(bdb)
	}
	if err == nil && older { // brought to this build's format
		err = bdb.Update(putFormat)
	}
	ids := newIDIndex()
	if err == nil {
		err = bdb.View(ids.load)
	}
	if err != nil {
		bdb.Close()
		unlock()
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	d := &DB{
		unlock:    unlock,
		ids:       ids,
		db:        bdb,
		path:      path,
		queue:     make(chan write, maxGroup),
		closing:   make(chan struct{}),
		stopped:   make(chan struct{}),
		lingerGap: lingerGap,
		lingerMax: lingerMax,
		counts:    newCounter(),
	}
	markKept(dd, time.Now())
	go d.committer()
	return d, nil
}

// Path returns the data file's path.
func (d *DB) Path() string { return d.path }

// Close lets writes already in flight commit, refuses new ones with
// ErrClosed, stops the committer and closes the data file.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.inflight.Wait()
	close(d.closing)
	<-d.stopped
	err := d.flushCounts()
	if cerr := d.db.Close(); err == nil {
		err = cerr
	}
	d.unlock()
	return err
}

// Accept checks and records e's id, stores e, opens one delivery per
// direct destination of plan and applies its debounced routes, all in one
// write transaction, group-committed with
// concurrent calls. It returns only after the commit's fsync, so an
// acknowledged event survives a crash with its deliveries.
func (d *DB) Accept(_ context.Context, e *app.Event, idExpires time.Time, plan *app.Plan) (bool, error) {
	key := idKey(e.Source, e.ID)
	// A remembered, unexpired id stays remembered (the sweep only forgets
	// expired ones), so a read transaction can answer most duplicates
	// without queueing for a commit; a miss is decided in the write below.
	if d.remembered(key, e.ReceivedAt) {
		return true, nil
	}
	rec := encodeEvent(e)
	exp := idExpires.UnixNano()
	var dup, over bool
	var seq uint64
	// The committer may run this function more than once: it only sets results.
	err := d.updateTx(func(tx *bolt.Tx, st *txState) error {
		dup, over, seq = false, false, 0
		expiry := tx.Bucket(bucketExpiry)
		pending, again := st.ids[string(key)]
		old, ok := pending.exp, again
		if !again {
			old, _, ok = d.ids.find(tx, key)
		}
		if ok && old > e.ReceivedAt.UnixNano() {
			dup = true
			return nil
		}
		// Where the index will keep the key, decided before the expired
		// entry of the same key (if any) is deleted: its slot is the key's.
		if again { // accepted earlier in this transaction: same place
			over = pending.over
		} else {
			over = d.ids.placeOver(tx, key, st.main)
			if !over {
				st.main[d.ids.hash(key)] = true
			}
		}
		if ok { // expired but not swept yet: it may be accepted again
			if err := expiry.Delete(nanoKey(old, key)); err != nil {
				return err
			}
		}
		events := tx.Bucket(bucketEvents)
		s, err := events.NextSequence()
		if err != nil {
			return err
		}
		if err := events.Put(seqKey(s), rec); err != nil {
			return err
		}
		if err := expiry.Put(nanoKey(exp, key), seqKey(s)); err != nil {
			return err
		}
		if plan != nil {
			if err := addDeliveries(tx, s, plan.Direct, e.ReceivedAt); err != nil {
				return err
			}
			for _, op := range plan.Debounce {
				if err := applyDebounce(tx, op, s, e.ReceivedAt); err != nil {
					return err
				}
			}
		}
		st.counts.Accepted(e, plan)
		st.ids[string(key)] = txID{exp: exp, over: over}
		seq = s
		return nil
	}, func(st *txState) {
		if !dup {
			d.ids.add(key, exp, over)
			st.opened = st.opened || !plan.Empty()
		}
	})
	if err != nil {
		return false, fmt.Errorf("accept %s/%s: %w", e.Source, e.ID, err)
	}
	if !dup {
		e.Seq = seq
	}
	return dup, nil
}

// remembered reports whether key is remembered and unexpired at t. Only
// an index hit costs a read transaction (to confirm it).
func (d *DB) remembered(key []byte, t time.Time) bool {
	if exp, ok := d.ids.lookup(key); !ok || exp <= t.UnixNano() {
		return false
	}
	var ok bool
	d.db.View(func(tx *bolt.Tx) error {
		exp, _, found := d.ids.find(tx, key)
		ok = found && exp > t.UnixNano()
		return nil
	})
	return ok
}

// DeleteEventsBefore deletes at most limit of the oldest events received
// before t whose deliveries are all delivered, with those deliveries, their
// attempts and their merged links. Events with work not yet done are kept
// whatever their age: a pending (due, retrying) or dead delivery, or a
// debounced or rate-limited delivery waiting to send them. An event that
// cannot be read is kept too. Events are keyed by sequence, which follows
// arrival, so the scan stops at the first event that is young enough.
func (d *DB) DeleteEventsBefore(t time.Time, limit int) (int, error) {
	var n int
	err := d.db.Update(func(tx *bolt.Tx) error {
		n = 0
		events := tx.Bucket(bucketEvents)
		waiting := tx.Bucket(bucketPendingEvent)
		var keys [][]byte
		c := events.Cursor()
		for k, v := c.First(); k != nil && len(keys) < limit; k, v = c.Next() {
			at, err := receivedAt(v)
			if err != nil {
				continue
			}
			if !at.Before(t) {
				break
			}
			if waiting.Get(k) != nil {
				continue
			}
			if allDelivered(tx, k) {
				keys = append(keys, append([]byte(nil), k...))
			}
		}
		for _, k := range keys {
			if err := deleteEvent(tx, k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("delete old events: %w", err)
	}
	return n, nil
}

// allDelivered reports whether every delivery of the event keyed k is
// delivered; one that cannot be read counts as not delivered.
func allDelivered(tx *bolt.Tx, k []byte) bool {
	c := tx.Bucket(bucketEventDlv).Cursor()
	for dk, _ := c.Seek(k); dk != nil && bytes.HasPrefix(dk, k); dk, _ = c.Next() {
		dl, err := getDelivery(tx, binary.BigEndian.Uint64(dk[8:]))
		if err != nil || dl.State != app.Delivered {
			return false
		}
	}
	return true
}

// deleteMerged deletes the merged links of the event keyed k, both ways:
// the events merged into it, and the event it was merged into.
func deleteMerged(tx *bolt.Tx, k []byte) error {
	mb := tx.Bucket(bucketMerged)
	var links [][]byte
	if into := mb.Get(k); len(into) == 8 {
		links = append(links, k, append(append([]byte(nil), into...), k...))
	}
	c := mb.Cursor()
	for mk, _ := c.Seek(k); mk != nil && bytes.HasPrefix(mk, k); mk, _ = c.Next() {
		if len(mk) != 16 {
			continue
		}
		links = append(links, append([]byte(nil), mk...))
		if bytes.Equal(mb.Get(mk[8:]), k) {
			links = append(links, append([]byte(nil), mk[8:]...))
		}
	}
	for _, l := range links {
		if err := mb.Delete(l); err != nil {
			return err
		}
	}
	return nil
}

// deleteEvent deletes the event keyed k, its deliveries and their
// attempts, and its merged links.
func deleteEvent(tx *bolt.Tx, k []byte) error {
	if err := deleteMerged(tx, k); err != nil {
		return err
	}
	var links, attempts [][]byte
	c := tx.Bucket(bucketEventDlv).Cursor()
	for dk, _ := c.Seek(k); dk != nil && bytes.HasPrefix(dk, k); dk, _ = c.Next() {
		links = append(links, append([]byte(nil), dk...))
		ac := tx.Bucket(bucketAttempts).Cursor()
		for ak, _ := ac.Seek(dk[8:]); ak != nil && bytes.HasPrefix(ak, dk[8:]); ak, _ = ac.Next() {
			attempts = append(attempts, append([]byte(nil), ak...))
		}
	}
	for _, ak := range attempts {
		if err := tx.Bucket(bucketAttempts).Delete(ak); err != nil {
			return err
		}
	}
	for _, dk := range links {
		if err := tx.Bucket(bucketDeliveries).Delete(dk[8:]); err != nil {
			return err
		}
		if err := tx.Bucket(bucketEventDlv).Delete(dk); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketEvents).Delete(k)
}

// Event returns the event stored under seq, or nil when there is none.
func (d *DB) Event(seq uint64) (*app.Event, error) {
	var e *app.Event
	err := d.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketEvents).Get(seqKey(seq))
		if v == nil {
			return nil
		}
		var err error
		e, err = decodeEvent(v)
		if e != nil {
			e.Seq = seq
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	return e, nil
}

// LookupID reports whether source's id is remembered, until when, and the
// sequence number of the event that was accepted with it.
func (d *DB) LookupID(source, id string) (expires time.Time, seq uint64, ok bool, err error) {
	key := idKey(source, id)
	err = d.db.View(func(tx *bolt.Tx) error {
		exp, entry, found := d.ids.find(tx, key)
		if ok = found; !ok {
			return nil
		}
		expires = time.Unix(0, exp)
		seq, err = expirySeq(entry)
		return err
	})
	return expires, seq, ok, err
}

// Counts reports how many ids are remembered and how many events are stored.
func (d *DB) Counts() (ids, events int, err error) {
	err = d.db.View(func(tx *bolt.Tx) error {
		ids = d.ids.len()
		events = tx.Bucket(bucketEvents).Stats().KeyN
		return nil
	})
	return ids, events, err
}

// Ping reports whether the data file can be read; it backs /healthz.
func (d *DB) Ping() error {
	return d.db.View(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketEvents) == nil {
			return errors.New("events bucket missing")
		}
		return nil
	})
}

// Check runs bbolt's consistency check and returns the first problem found.
func (d *DB) Check() error {
	return d.db.View(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drain: the checker runs until done
			if first == nil {
				first = err
			}
		}
		return first
	})
}

// Backup writes a consistent copy of the data file to a new temp file in
// dir, from one read transaction (ingest goes on meanwhile), and returns
// it open at its start, already unlinked: the copy goes away when the
// caller closes it, and is never held in memory.
func (d *DB) Backup(dir string) (*os.File, int64, error) {
	f, err := os.CreateTemp(dir, ".backup-*")
	if err != nil {
		return nil, 0, fmt.Errorf("backup: %w", err)
	}
	os.Remove(f.Name())
	n, err := d.copyTo(f)
	if err == nil {
		_, err = f.Seek(0, 0)
	}
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("backup: %w", err)
	}
	return f, n, nil
}

var bucketMeta = []byte("meta") // name → value: small settings hookbox keeps for itself

// Meta returns the value stored under name, or nil.
func (d *DB) Meta(name string) ([]byte, error) {
	var v []byte
	err := d.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			v = append([]byte(nil), b.Get([]byte(name))...)
		}
		return nil
	})
	if len(v) == 0 {
		v = nil
	}
	return v, err
}

// SetMeta stores value under name, durably.
func (d *DB) SetMeta(name string, value []byte) error {
	return d.update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put([]byte(name), value)
	})
}

// SecureDir makes sure the data directory dir exists with mode 0700
// (app.DataDirMode): it holds every event with its headers. It returns the
// mode an existing directory had when it had to be changed (0: it was
// right, or is new).
func SecureDir(dir string) (was os.FileMode, err error) {
	// makeDir, not os.MkdirAll: a new directory must survive a power cut,
	// and Open's own makeDir finds it made.
	if err := makeDir(dir); err != nil {
		return 0, fmt.Errorf("create data dir %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return 0, err
	}
	if fi.Mode().Perm() == app.DataDirMode {
		return 0, nil
	}
	if err := os.Chmod(dir, app.DataDirMode); err != nil {
		return 0, fmt.Errorf("data dir %s has mode %04o: %w", dir, fi.Mode().Perm(), err)
	}
	return fi.Mode().Perm(), nil
}
