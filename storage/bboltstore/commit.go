package bboltstore

import (
	"context"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"hookbox/app"
	"hookbox/storage"
)

// ErrClosed is returned by writes after Close: storage.ErrClosed, the
// sentinel both stores share.
var ErrClosed = storage.ErrClosed

// maxGroup bounds how many writes share one commit.
const maxGroup = 1024

// A write waiting for the committer. fn may run more than once (when another
// write in its group fails and the group is retried without it), so it must
// only set results, never act on the world.
type write struct {
	fn func(*bolt.Tx, *txState) error
	// committed, when set, runs in the committer once the commit is
	// durable, before the answer and before the next transaction: it
	// applies the write's results to in-memory state (the id index).
	committed func(*txState)
	done      chan error
	// quiet says the write is bookkeeping (an audit entry, a token's last
	// use) that tells nothing of the storage's health: a commit of quiet
	// writes only is not reported to OnCommit. On a full disk such a write
	// fits in free pages while the events' commits fail, and its success
	// must not say "storage works again".
	quiet bool
}

// txState is what the writes of one transaction share, handed to each of
// them and to their committed hooks. The committer resets it as each
// transaction starts, so nothing in it outlives the transaction.
type txState struct {
	// Ids added by the transaction, for the writes after them in it; the
	// committed hooks move them to the id index.
	ids  map[string]txID // key → its entry
	main map[uint64]bool // hashes of those that take a slot in ids.main
	// opened is set by the committed hooks of a commit in which Accept
	// opened work for the dispatcher; onOpened is then told (OnOpened).
	opened bool
	// counts are what the transaction's writes change in the counts, as
	// the domain says (app.CountDelta); writeCounts adds them, summed in
	// fold (which it empties itself).
	counts app.CountDelta
	fold   *countFold
}

func newTxState() *txState {
	return &txState{ids: map[string]txID{}, main: map[uint64]bool{}, fold: newCountFold()}
}

// reset empties st for the next transaction, keeping its room.
func (st *txState) reset() {
	clear(st.ids)
	clear(st.main)
	st.opened = false
	st.counts.Reset()
}

// committer is hookbox's group commit. One goroutine runs every write
// transaction; whatever writes queued while a commit (and its fsync) was in
// progress go into the next commit together. Under load a commit carries as
// many writes as arrived during the last fsync; alone, a write commits at
// once. bbolt's own Batch waits for a timer instead, which measured 2-3x
// slower here at 64 concurrent callers (BenchmarkAccept).
func (d *DB) committer() {
	defer close(d.stopped)
	group := make([]write, 0, maxGroup)
	st := newTxState()
	delay := time.NewTimer(applyDelay)
	delay.Stop()
	armed := false
	for {
		select {
		case w := <-d.queue:
			group = d.gather(append(group[:0], w))
		case <-d.tailReady:
			if !armed {
				delay.Reset(applyDelay)
				armed = true
			}
			continue
		case <-delay.C:
			armed = false
			group = group[:0] // the tail alone
		case <-d.applyWake:
			group = group[:0] // the tail alone
		case <-d.closing:
			// The intake has stopped: what it logged is applied now,
			// so that a clean stop leaves an empty log.
			for len(d.tailHead()) > 0 && d.commitGroup(nil, st) == nil {
			}
			return
		}
		d.commitGroup(group, st)
	}
}

// gather adds to group what is queued, then lingers while more writes keep
// arriving: callers answered by the last commit come back within a network
// round trip, and one commit for all of them beats two for half each. It
// stops at the first quiet gap of lingerGap, after lingerMax, or at maxGroup,
// so a lone write waits at most lingerGap.
func (d *DB) gather(group []write) []write {
	return gatherFrom(d.queue, group, d.lingerGap, d.lingerMax)
}

// commitGroup applies the tail's oldest records (intake.go) and runs the
// group's functions, in one transaction. A function that fails is answered
// with its error and the rest are retried without it, so one bad write
// never fails its neighbours. A record of the tail that cannot be applied
// fails the whole commit (an acknowledged event is never set aside): it
// stays in the tail, and the next commit tries it again. The error is
// that of the tail's records.
func (d *DB) commitGroup(group []write, st *txState) error {
	d.gate.RLock()
	defer d.gate.RUnlock()
	for {
		recs := d.tailHead()
		if len(group) == 0 && len(recs) == 0 {
			return nil
		}
		failed := -1
		err := d.updateBolt(func(tx *bolt.Tx) error {
			fillAppendOnly(tx)
			st.reset()
			for _, l := range recs {
				if err := d.applyLogged(tx, st, l); err != nil {
					return err
				}
			}
			for i, w := range group {
				if err := w.fn(tx, st); err != nil {
					failed = i
					return err
				}
			}
			return d.writeCounts(tx, &st.counts, st.fold)
		})
		d.settleCounts(err == nil)
		if failed >= 0 {
			group[failed].done <- err
			group = append(group[:failed], group[failed+1:]...)
			continue
		}
		if f := d.onCommit.Load(); f != nil && (len(recs) > 0 || !allQuiet(group)) {
			(*f)(err)
		}
		if err == nil {
			d.commits.Add(1)
			d.writes.Add(uint64(len(group) + len(recs)))
			d.loggedCommitted(recs, st)
			for _, w := range group {
				if w.committed != nil {
					w.committed(st)
				}
			}
			if f := d.onOpened.Load(); st.opened && f != nil {
				(*f)()
			}
		}
		d.tailApplied(recs, err)
		for _, w := range group {
			w.done <- err // nil, or the commit's error for all of them
		}
		if brokenEarlyAck {
			d.db().Sync()
		}
		return err
	}
}

// appendOnly are the buckets whose keys grow with time or sequence: new
// keys land at their right edge, where bbolt's default split (half-full
// pages, meant for random inserts) would leave every page half empty. The
// due index grows so within each destination (a delivery is due now or
// later).
var appendOnly = [][]byte{bucketEvents, bucketExpiry, bucketDeliveries, bucketEventDlv, bucketAttempts, bucketDue}

// fillAppendOnly packs tx's append-only buckets' pages full: fewer pages
// written per commit and a smaller file for small events (BenchmarkAccept,
// empty bodies: 0.30 pages per event before, 0.26 after; 2 KiB bodies fill
// a page each either way).
func fillAppendOnly(tx *bolt.Tx) {
	for _, name := range appendOnly {
		tx.Bucket(name).FillPercent = 1.0
	}
}

// view runs fn in a read transaction, unless ctx is done already: a read
// is short and bbolt cannot stop one midway, so ctx is checked before it.
func (d *DB) view(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return d.rawView(fn)
}

// viewCaught is view for the reads a person or a sender's next request
// makes (the pages, the API, the command line): it sees every event
// answered before it (caughtUp), unless the data file cannot take them
// (its disk full: then it reads what the file holds). The dispatcher's
// reads need not wait: the commit that applies events wakes it.
func (d *DB) viewCaught(ctx context.Context, fn func(*bolt.Tx) error) error {
	d.caughtUp(ctx)
	return d.view(ctx, fn)
}

// rawView is view without a context, on the data file as it is: for the
// intake and the committer's helpers, which must not wait for the tail.
func (d *DB) rawView(fn func(*bolt.Tx) error) error {
	for {
		db := d.db()
		err := db.View(fn)
		if errors.Is(err, bolterrors.ErrDatabaseNotOpen) && d.db() != db {
			continue // a compaction swapped the file before this read began
		}
		return err
	}
}

// updateBolt runs fn in a bbolt write transaction on the open file, or
// fails when a compaction lost it. The caller holds the gate.
func (d *DB) updateBolt(fn func(*bolt.Tx) error) error {
	if err := d.broken.Load(); err != nil {
		return *err
	}
	return d.db().Update(fn)
}

// updateDirect is updateBolt for the writes that run outside the
// committer (long ones, and the last counts at Close): they hold the gate
// too, so a compaction's last round sees no write.
func (d *DB) updateDirect(fn func(*bolt.Tx) error) error {
	d.gate.RLock()
	defer d.gate.RUnlock()
	return d.updateBolt(fn)
}

// update runs fn in a group-committed write transaction and returns after
// the commit is durable.
func (d *DB) update(ctx context.Context, fn func(*bolt.Tx) error) error {
	return d.updateTx(ctx, func(tx *bolt.Tx, _ *txState) error { return fn(tx) }, nil)
}

// updateQuiet is update for a quiet write (see write.quiet).
func (d *DB) updateQuiet(ctx context.Context, fn func(*bolt.Tx) error) error {
	return d.enqueue(ctx, write{fn: func(tx *bolt.Tx, _ *txState) error { return fn(tx) }, quiet: true, done: make(chan error, 1)})
}

// allQuiet reports whether every write of group is quiet.
func allQuiet(group []write) bool {
	for _, w := range group {
		if !w.quiet {
			return false
		}
	}
	return true
}

// updateTx is update for a write that shares its transaction's state, with
// a committed hook (see write). ctx is honoured up to the moment the write
// is handed to the committer: a write whose ctx is done before, or while it
// waits for room in the queue, returns ctx's error and is never run. Once
// handed over it may commit at any moment, so it is waited for whatever ctx
// says: updateTx never reports success before the commit returns, and never
// an error for a write that commits.
func (d *DB) updateTx(ctx context.Context, fn func(*bolt.Tx, *txState) error, committed func(*txState)) error {
	return d.enqueue(ctx, write{fn: fn, committed: committed, done: make(chan error, 1)})
}

// enter counts a call in flight, which Close waits for, unless Close
// began: then it returns false. The caller calls d.inflight.Done.
func (d *DB) enter() bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return false
	}
	d.inflight.Add(1)
	return true
}

// enqueue hands w to the committer and waits for its commit (updateTx).
func (d *DB) enqueue(ctx context.Context, w write) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !d.enter() {
		return ErrClosed
	}
	defer d.inflight.Done()
	select {
	case d.queue <- w:
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-w.done
}

// Group-commit lingering (see gather), measured with bench -compare
// (docs/BENCHMARKS.md, issue 33): against 100 µs/1 ms, a 30 µs gap and
// 300 µs at most took 16 connections from 14–15% of the stateless relay
// to 20%, 64 from 34.5% to 37–38%, kept 256 the same, and brought the
// open loop's p99 at 2,000/s under 5 ms; no linger at all did as well at
// 16 connections but 6% worse at 256 (each commit carries fewer writes
// while the CPUs are short).
const (
	lingerGap = 30 * time.Microsecond
	lingerMax = 300 * time.Microsecond
)

// SetLinger changes how long the committer waits for more writes to join
// a commit (see gather); gap 0 commits whatever is queued at once. Call
// it before the first write.
func (d *DB) SetLinger(gap, max time.Duration) {
	d.lingerGap, d.lingerMax = gap, max
}

// OnOpened sets f to be called once per commit in which Accept opened
// deliveries or debounce steps, after the commit is durable: hookbox wakes
// its dispatcher with it, once per commit rather than once per event. f
// must not block.
func (d *DB) OnOpened(f func()) { d.onOpened.Store(&f) }

// OnCommit sets f to be told the outcome of every group commit: nil, or
// the error that failed it (a full disk, a failing one) and every write
// in it. hookbox follows its storage's health with it. f must not block.
func (d *DB) OnCommit(f func(err error)) { d.onCommit.Store(&f) }

// CommitCounts reports what the committer did since Open: commits made,
// writes they carried (their ratio is the group size) and the pages bbolt
// wrote in all write transactions, the figure that fsync time follows.
func (d *DB) CommitCounts() (commits, writes, pages uint64) {
	st := d.db().Stats()
	return d.commits.Load(), d.writes.Load(), d.pagesGone.Load() + uint64(st.TxStats.GetPageCount())
}
