// Package bboltstore keeps hookbox's state (app.Store) in one bbolt file: the
// remembered event ids with their expiry index, the events, their
// deliveries and attempts, the debounced pending deliveries, the counts and
// the records set aside. Every write that backs an answer to a sender is
// committed with fsync before it returns.
package bboltstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
	handle atomic.Pointer[bolt.DB] // the open file; a compaction swaps it (db)
	path   string
	unlock func() // releases the data directory's lock (lockDir)

	queue     chan write    // writes waiting for the committer
	closing   chan struct{} // closed by Close once no write is in flight
	stopped   chan struct{} // closed when the committer has returned
	mu        sync.RWMutex  // guards closed
	closed    bool
	inflight  sync.WaitGroup // writes between their check of closed and their answer
	ensureMu  sync.Mutex     // one EnsureFirstUser at a time
	lingerGap time.Duration  // see gather
	lingerMax time.Duration
	commits   atomic.Uint64 // see CommitCounts
	writes    atomic.Uint64

	ids      *idIndex // remembered ids by name (ids.go)
	onOpened atomic.Pointer[func()]
	onCommit atomic.Pointer[func(error)]      // see OnCommit
	counts   *counter                         // hourly counts not written yet (counts.go)
	budget   atomic.Pointer[app.SearchBudget] // see SetSearchBudget; nil: the default
	jobs     jobLocks                         // see TryJobLock (joblock.go)

	// The intake (intake.go): Accept's requests, the log, and the tail of
	// events logged and answered but not applied to the data file yet.
	inbox         chan *intake
	log           *logFiles
	logID         uint64        // the data file's, written in each record (logrec.go)
	intakeClosing chan struct{} // closed by Close once no Accept is in flight
	intakeStopped chan struct{} // closed when the intake goroutine has returned
	applyWake     chan struct{} // apply the tail now (intake.go)
	tailReady     chan struct{} // the tail holds records: apply them within applyDelay
	tailMu        sync.Mutex    // guards what follows
	tail          []*logged     // oldest first
	tailBytes     int
	pendingIDs    map[string]*logged // the tail's keys → their newest record
	loggedSeq     uint64             // the newest seq logged
	appliedSeq    uint64             // the newest seq applied and committed
	appliedCh     chan struct{}      // closed, and replaced, at each attempt to apply records
	applyErr      error              // the last attempt's error (nil: it worked)

	packer   atomic.Pointer[packer] // packs new events; nil: no dictionary yet (dict.go)
	accepted atomic.Int64           // events accepted since Open, until a dictionary
	training atomic.Bool            // a dictionary is being trained
	trainers sync.WaitGroup

	// gate is the write side: the committer holds it for reading through
	// each commit, and so do the few writes that run outside it; a
	// compaction's last round holds it for writing (compact.go). Readers
	// never take it.
	gate       sync.RWMutex
	broken     atomic.Pointer[error] // set when a compaction lost the file: every write fails
	compacting atomic.Bool
	pagesGone  atomic.Uint64  // pages written through handles a compaction closed
	releasing  sync.WaitGroup // the releaser (openmap.go)
}

// db returns the open bbolt file. A compaction may swap it at any moment:
// a reader uses view, which begins again on the new file when the one it
// took was closed under it.
func (d *DB) db() *bolt.DB { return d.handle.Load() }

var _ app.Store = (*DB)(nil)

// noFreelistSync is bbolt's NoFreelistSync: the free page list is not
// written with every commit but rebuilt at Open by walking the file's
// pages. freelistType is how bbolt keeps that list in memory. (Tests set
// both to compare.)
var (
	noFreelistSync = false
	freelistType   = bolt.FreelistArrayType
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
	// A compaction that died left its copy: the file is whole without it
	// (compact.go).
	if err := dd.Remove(compactName); err != nil && !errors.Is(err, os.ErrNotExist) {
		unlock()
		return nil, fmt.Errorf("open %s: remove a compaction's leftover: %w", path, err)
	}
	if err := inspect(dd); err != nil {
		unlock()
		return nil, err
	}
	bdb, err := openBolt(dd, path)
	if err != nil {
		unlock()
		return nil, err
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
	if err == nil {
		err = reindexOrder(bdb)
	}
	if err == nil && older { // brought to this build's format
		err = bdb.Update(putFormat)
	}
	ids := newIDIndex()
	if err == nil {
		err = ids.load(bdb)
	}
	var pk *packer
	if err == nil {
		err = bdb.View(func(tx *bolt.Tx) (err error) { pk, err = loadDicts(tx); return err })
	}
	if err != nil {
		bdb.Close()
		unlock()
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	bdb.View(func(tx *bolt.Tx) error { releaseMap(tx); return nil }) // what the scans above touched
	d := &DB{
		unlock:        unlock,
		ids:           ids,
		path:          path,
		queue:         make(chan write, maxGroup),
		closing:       make(chan struct{}),
		stopped:       make(chan struct{}),
		inbox:         make(chan *intake, maxGroup),
		intakeClosing: make(chan struct{}),
		intakeStopped: make(chan struct{}),
		applyWake:     make(chan struct{}, 1),
		tailReady:     make(chan struct{}, 1),
		pendingIDs:    map[string]*logged{},
		appliedCh:     make(chan struct{}),
		lingerGap:     lingerGap,
		lingerMax:     lingerMax,
		counts:        newCounter(),
	}
	d.handle.Store(bdb)
	if pk != nil {
		d.packer.Store(pk)
	}
	if err := d.openLog(dd); err != nil {
		bdb.Close()
		unlock()
		return nil, fmt.Errorf("init %s: %w", path, err)
	}
	markKept(dd, time.Now())
	go d.committer()
	go d.intakeLoop()
	d.releasing.Add(1)
	go d.releaser()
	return d, nil
}

// openBolt opens the data file in dd with hookbox's options, and syncs
// dd: bbolt syncs a new file's pages, not its name, and without a sync of
// the directory a power cut after the first commits can take the whole
// file (TestPowerLoss_FirstStart).
func openBolt(dd *datadir.Dir, path string) (*bolt.DB, error) {
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, InitialMmapSize: initialMmapSize, NoSync: brokenNoSync,
		NoFreelistSync: noFreelistSync, FreelistType: freelistType,
		OpenFile: func(_ string, flag int, perm os.FileMode) (*os.File, error) { return dd.OpenFile(FileName, flag, perm) }})
	if err != nil {
		if errors.Is(err, bolterrors.ErrTimeout) {
			return nil, fmt.Errorf("open %s: %w", path, ErrLocked)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	bdb.AllocSize = allocSize
	if err := dd.Sync(); err != nil {
		bdb.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return bdb, nil
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
	d.trainers.Wait()
	d.inflight.Wait()
	close(d.intakeClosing)
	<-d.intakeStopped
	close(d.closing)
	<-d.stopped // the committer applied the tail before it returned
	d.releasing.Wait()
	err := d.flushCounts()
	if len(d.tailHead()) == 0 { // else Open applies it again
		err = errors.Join(err, d.log.reset())
	}
	err = errors.Join(err, d.log.close())
	if cerr := d.db().Close(); err == nil {
		err = cerr
	}
	d.unlock()
	return err
}

// Event returns the event stored under seq, or nil when there is none.
func (d *DB) Event(ctx context.Context, seq uint64) (*app.Event, error) {
	var e *app.Event
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
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
func (d *DB) LookupID(ctx context.Context, source, id string) (expires time.Time, seq uint64, ok bool, err error) {
	key := idKey(source, id)
	err = d.viewCaught(ctx, func(tx *bolt.Tx) error {
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
func (d *DB) Counts(ctx context.Context) (ids, events int, err error) {
	err = d.viewCaught(ctx, func(tx *bolt.Tx) error {
		ids = d.ids.len()
		events = tx.Bucket(bucketEvents).Stats().KeyN
		return nil
	})
	return ids, events, err
}

// Ping reports whether the data file can be read; it backs /healthz.
func (d *DB) Ping(ctx context.Context) error {
	return d.view(ctx, func(tx *bolt.Tx) error {
		if tx.Bucket(bucketEvents) == nil {
			return errors.New("events bucket missing")
		}
		return nil
	})
}

// Check runs bbolt's consistency check and returns the first problem
// found. It holds the writes off while it runs: the checker reads bbolt's
// free list, which a commit (one that fails too) changes under it.
func (d *DB) Check() error {
	d.caughtUp(context.Background())
	d.gate.Lock()
	defer d.gate.Unlock()
	return d.rawView(func(tx *bolt.Tx) error {
		var first error
		for err := range tx.Check() { // drain: the checker runs until done
			if first == nil {
				first = err
			}
		}
		return first
	})
}

// Backup writes a consistent copy of the data file's live data (compactTo)
// to a new temp file in dir, from one read transaction (ingest goes on
// meanwhile), and returns it open at its start, already unlinked: the copy
// goes away when the caller closes it, and is never held in memory.
func (d *DB) Backup(dir string) (*os.File, int64, error) {
	f, err := os.CreateTemp(dir, ".backup-*")
	if err != nil {
		return nil, 0, fmt.Errorf("backup: %w", err)
	}
	name := f.Name()
	defer os.Remove(name)
	n, err := d.compactTo(context.Background(), openedPath(f))
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("backup: %w", err)
	}
	return f, n, nil
}

// openedPath names the file f holds open: /proc/self/fd/N where there is
// one, which opens that very file whatever has become of its name since;
// else its name. Another process of the data directory's owner can put a
// link in place of a name between its creation and its use (the attacker
// of TestLocalUser_RootCommands does), and the copy must still go to the
// file created.
func openedPath(f *os.File) string {
	p := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
		return p
	}
	return f.Name()
}

// allocSize is how much the data file grows by when it must (bbolt's
// default is 16 MiB): the file's size is what the disk pays, and a 16 MiB
// step is 800 bytes per event of a file of 20,000 events. Each step costs
// a truncate and an fsync, a few a second at full ingest.
const allocSize = 1 << 20

var bucketMeta = []byte("meta") // name → value: small settings hookbox keeps for itself

// Meta returns the value stored under name, or nil.
func (d *DB) Meta(ctx context.Context, name string) ([]byte, error) {
	var v []byte
	err := d.view(ctx, func(tx *bolt.Tx) error {
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
func (d *DB) SetMeta(ctx context.Context, name string, value []byte) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
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
