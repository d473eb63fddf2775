package bboltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app/datadir"
)

// The intake: how an accepted event becomes durable. Accept hands the
// event to one goroutine, which decides whether its id is new (against
// the data file and the events logged but not applied yet), gives it its
// seq, and writes every event of the group to the intake log with one
// append and one fdatasync; then it answers. The committer applies the
// logged events to the data file behind it (deliveries, debounce, the id
// index, the counts), many to a commit and in the log's order, before any
// other write of the same transaction: every write and every decision of
// the store sees every acknowledged event. A log record is dropped once
// the commit that applied it is durable; Open applies those a crash left.
//
// Against a bbolt commit per group in the answer's path (two syncs and the
// B+tree's pages), the answer waits for one append: docs/BENCHMARKS.md.

// An intake request: one Accept waiting for its group's sync.
type intake struct {
	l        *logged
	received int64 // the event's ReceivedAt, UnixNano
	dup      bool
	err      error
	done     chan struct{}
}

// Bounds of the tail (logged, not applied): past them the intake waits
// for the committer. One commit applies at most applyMax records, so a
// commit that follows a burst stays short.
const (
	maxTail      = 16384
	maxTailBytes = 64 << 20
	applyMax     = 2048
)

// intakeLoop is the intake goroutine: it runs until Close.
func (d *DB) intakeLoop() {
	defer close(d.intakeStopped)
	group := make([]*intake, 0, maxGroup)
	var buf []byte
	for {
		var r *intake
		select {
		case r = <-d.inbox:
		case <-d.intakeClosing:
			return
		}
		group = gatherFrom(d.inbox, append(group[:0], r), d.lingerGap, d.lingerMax)
		buf = d.intakeGroup(group, buf[:0])
	}
}

// intakeGroup decides, logs and answers one group. It returns buf for
// the next group.
func (d *DB) intakeGroup(group []*intake, buf []byte) []byte {
	if err := d.waitRoom(); err != nil {
		answer(group, err)
		return buf
	}
	var fresh []*logged
	d.tailMu.Lock()
	seq := d.loggedSeq
	for _, r := range group {
		newest, ok := d.pendingIDs[string(r.l.key)]
		if ok && newest.exp > r.received {
			r.dup = true
			continue
		}
		if !ok && d.remembered(r.l.key, r.received) {
			r.dup = true
			continue
		}
		seq++
		r.l.seq = seq
		r.l.prev = newest
		d.pendingIDs[string(r.l.key)] = r.l
		fresh = append(fresh, r.l)
	}
	d.tailMu.Unlock()
	if len(fresh) == 0 {
		answer(group, nil)
		return buf
	}
	for _, l := range fresh {
		buf = appendRecord(buf, d.logID, l)
	}
	err := d.log.append(buf, seq, !brokenNoSync && !brokenEarlyAck)
	d.tailMu.Lock()
	tail := len(d.tail)
	if err != nil {
		for _, l := range slices.Backward(fresh) {
			if d.pendingIDs[string(l.key)] == l {
				if p := l.prev; p != nil && p.seq > d.appliedSeq {
					d.pendingIDs[string(l.key)] = p
				} else {
					delete(d.pendingIDs, string(l.key))
				}
			}
		}
	} else {
		d.loggedSeq = seq
		d.tail = append(d.tail, fresh...)
		tail = len(d.tail)
		for _, l := range fresh {
			d.tailBytes += len(l.rec)
		}
	}
	d.tailMu.Unlock()
	if err == nil {
		d.tailNews(tail)
	}
	if f := d.onCommit.Load(); f != nil {
		(*f)(err)
	}
	answer(group, err)
	if brokenEarlyAck && err == nil {
		d.log.sync()
	}
	return buf
}

// answer ends the wait of each request of group.
func answer(group []*intake, err error) {
	for _, r := range group {
		if !r.dup {
			r.err = err
		}
		close(r.done)
	}
}

// waitRoom waits while the tail is past its bounds, until the committer
// catches up (nil). While the committer's last attempt to apply the tail
// failed (the data file's disk full), it fails at once with that error:
// new events are refused, as a failing commit refused them before the
// log, rather than piled up in a tail that Open could not apply either;
// each group waits for one more attempt first. With ErrClosed on Close.
func (d *DB) waitRoom() error {
	for tried := false; ; {
		d.tailMu.Lock()
		full := len(d.tail) >= maxTail || d.tailBytes >= maxTailBytes
		ch, err := d.appliedCh, d.applyErr
		d.tailMu.Unlock()
		if err != nil && tried {
			return fmt.Errorf("the data file is behind the intake log: %w", err)
		}
		if err != nil { // one more attempt first: the disk may have room again
			tried = true
		} else if !full {
			return nil
		}
		d.wakeApply()
		select {
		case <-ch:
		case <-d.intakeClosing:
			return ErrClosed
		}
	}
}

// applyDelay is how long the committer lets the tail grow before it
// applies it, unless a write, a read that must see it (caughtUp) or a
// full chunk (applyMax) comes first: a commit, with its two syncs of the
// data file, for many events rather than for each group the log synced.
// Deliveries wait for it (the dispatcher is woken after the apply).
var applyDelay = 10 * time.Millisecond

// tailNews tells the committer that the tail holds n records: to apply
// them at once when they fill a chunk, else within applyDelay.
func (d *DB) tailNews(n int) {
	if n >= applyMax {
		d.wakeApply()
		return
	}
	select {
	case d.tailReady <- struct{}{}:
	default:
	}
}

// wakeApply asks the committer to apply the tail now.
func (d *DB) wakeApply() {
	select {
	case d.applyWake <- struct{}{}:
	default:
	}
}

// tailHead returns the oldest records of the tail, at most applyMax.
func (d *DB) tailHead() []*logged {
	d.tailMu.Lock()
	defer d.tailMu.Unlock()
	n := min(len(d.tail), applyMax)
	return d.tail[:n:n]
}

// tailApplied records the outcome of a commit that applied recs, the
// oldest records of the tail: when it is durable (err nil) it drops them;
// either way it wakes those waiting for it.
func (d *DB) tailApplied(recs []*logged, err error) {
	if len(recs) == 0 {
		return
	}
	last := recs[len(recs)-1].seq
	d.tailMu.Lock()
	d.applyErr = err
	if err == nil {
		for _, l := range recs {
			d.forgetPending(l)
			d.tailBytes -= len(l.rec)
		}
		d.tail = append(d.tail[:0:0], d.tail[len(recs):]...)
		d.appliedSeq = last
	}
	close(d.appliedCh)
	d.appliedCh = make(chan struct{})
	more := len(d.tail)
	d.tailMu.Unlock()
	if err != nil {
		return // tried again when woken: by the next group, a read, a write
	}
	d.log.applied(last)
	if more > 0 {
		d.tailNews(more)
	}
}

// tailDebounces reports whether an event of the tail has debounce steps.
func (d *DB) tailDebounces() bool {
	d.tailMu.Lock()
	defer d.tailMu.Unlock()
	for _, l := range d.tail {
		if l.plan != nil && len(l.plan.Debounce) > 0 {
			return true
		}
	}
	return false
}

// forgetPending drops l's key from the tail's keys, unless a newer
// record of the same key (accepted again after its expiry) holds it.
// The caller holds tailMu.
func (d *DB) forgetPending(l *logged) {
	if d.pendingIDs[string(l.key)] == l {
		delete(d.pendingIDs, string(l.key))
	}
}

// caughtUp waits until every event answered before the call is applied
// to the data file: the reads that a sender's next request may follow
// (the event, its id, the lists and counts) see it. When an attempt to
// apply them fails (the data file's disk full), it returns that error
// instead of waiting for the disk.
func (d *DB) caughtUp(ctx context.Context) error {
	var target uint64
	for tried := false; ; tried = true {
		d.tailMu.Lock()
		if !tried {
			target = d.loggedSeq
		}
		done, ch, err := d.appliedSeq >= target, d.appliedCh, d.applyErr
		d.tailMu.Unlock()
		if done {
			return nil
		}
		if tried && err != nil {
			return fmt.Errorf("the data file is behind the intake log: %w", err)
		}
		d.wakeApply()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-d.stopped:
			return ErrClosed
		}
	}
}

// gatherFrom adds to group what is queued on q, then lingers while more
// keeps arriving: see gather.
func gatherFrom[T any](q chan T, group []T, gap, most time.Duration) []T {
	deadline := time.Now().Add(most)
	timer := time.NewTimer(gap)
	defer timer.Stop()
	for len(group) < maxGroup {
		select {
		case w := <-q:
			group = append(group, w)
			continue
		default:
		}
		if gap <= 0 || !time.Now().Before(deadline) {
			break
		}
		timer.Reset(gap)
		select {
		case w := <-q:
			group = append(group, w)
		case <-timer.C:
			return group
		}
	}
	return group
}

// openLog opens the intake log and applies what a crash left in it: the
// records past the newest seq the data file holds, in commits of
// applyMax, before anything else is written. Then the log starts empty.
func (d *DB) openLog(dd *datadir.Dir) error {
	id, err := d.ensureLogID()
	if err != nil {
		return err
	}
	d.logID = id
	l, recs, err := openLog(dd, id)
	if err != nil {
		return err
	}
	d.log = l
	var applied uint64
	err = d.rawView(func(tx *bolt.Tx) error {
		applied = tx.Bucket(bucketEvents).Sequence()
		return nil
	})
	for len(recs) > 0 && recs[0].seq <= applied {
		recs = recs[1:]
	}
	d.appliedSeq, d.loggedSeq = applied, applied
	if n := len(recs); n > 0 {
		d.loggedSeq = recs[n-1].seq
		d.tail = recs
		for _, r := range recs {
			d.pendingIDs[string(r.key)] = r
			d.tailBytes += len(r.rec)
		}
	}
	st := newTxState()
	for err == nil && len(d.tail) > 0 {
		err = d.commitGroup(nil, st)
	}
	if err == nil {
		err = l.reset()
	}
	if err != nil {
		l.close()
		return fmt.Errorf("apply the intake log: %w", err)
	}
	return nil
}

var logIDKey = []byte("log_id")

// ensureLogID returns the data file's log id, making one when it has none
// (a new file, or one an older build wrote last).
func (d *DB) ensureLogID() (uint64, error) {
	var id uint64
	err := d.db().Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		if v := b.Get(logIDKey); len(v) == 8 {
			id = binary.BigEndian.Uint64(v)
			return nil
		}
		for id == 0 {
			id = rand.Uint64()
		}
		return b.Put(logIDKey, binary.BigEndian.AppendUint64(nil, id))
	})
	return id, err
}
