package bboltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// Accept checks and records e's id and, when it is new, logs e with
// plan (one direct delivery per destination of plan.Direct, and its
// debounced routes) to the intake log, group-synced with concurrent calls
// (intake.go). It returns only after the log's fdatasync, so an
// acknowledged event survives a crash; the committer applies it to the
// data file right behind, before any other write.
func (d *DB) Accept(ctx context.Context, e *app.Event, idExpires time.Time, plan *app.Plan) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	key := idKey(e.Source, e.ID)
	// A remembered, unexpired id stays remembered (the sweep only forgets
	// expired ones), so a read transaction can answer most duplicates
	// without queueing; a miss is decided by the intake.
	if d.remembered(key, e.ReceivedAt.UnixNano()) {
		return true, nil
	}
	if err := checkKeys(key, plan); err != nil {
		return false, fmt.Errorf("accept %s/%s: %w", e.Source, e.ID, err)
	}
	r := &intake{
		l: &logged{key: key, exp: idExpires.UnixNano(), rec: d.packEvent(e), plan: plan,
			head: app.Event{Source: e.Source, ID: e.ID, Topic: e.Topic, ReceivedAt: e.ReceivedAt}},
		received: e.ReceivedAt.UnixNano(),
		done:     make(chan struct{}),
	}
	if !d.enter() {
		return false, ErrClosed
	}
	defer d.inflight.Done()
	select {
	case d.inbox <- r:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	<-r.done // once handed over it may be logged at any moment: waited for
	if r.err != nil {
		return false, fmt.Errorf("accept %s/%s: %w", e.Source, e.ID, r.err)
	}
	if !r.dup {
		e.Seq = r.l.seq
	}
	return r.dup, nil
}

// applyLogged applies a logged accept to the data file in tx: the event
// under its seq, its id in the expiry index, its deliveries and debounce
// steps, its counts. The intake decided that the id is new, against the
// data file and the tail before it, which this transaction has applied
// already: an entry of the id that is still there has expired (it may be
// accepted again), and is replaced.
func (d *DB) applyLogged(tx *bolt.Tx, st *txState, l *logged) error {
	expiry := tx.Bucket(bucketExpiry)
	key, at := l.key, l.head.ReceivedAt
	pending, again := st.ids[string(key)]
	old, ok := pending.exp, again
	if !again {
		old, _, ok = d.ids.find(tx, key)
	}
	// Where the index will keep the key, decided before the expired
	// entry of the same key (if any) is deleted: its slot is the key's.
	var over bool
	if again { // applied earlier in this transaction: same place
		over = pending.over
	} else {
		over = d.ids.placeOver(tx, key, st.main)
		if !over {
			st.main[d.ids.hash(key)] = true
		}
	}
	if ok {
		if err := expiry.Delete(nanoKey(old, key)); err != nil {
			return err
		}
	}
	events := tx.Bucket(bucketEvents)
	if err := events.Put(seqKey(l.seq), l.rec); err != nil {
		return err
	}
	if events.Sequence() < l.seq {
		if err := events.SetSequence(l.seq); err != nil {
			return err
		}
	}
	if err := expiry.Put(nanoKey(l.exp, key), seqKey(l.seq)); err != nil {
		return err
	}
	if plan := l.plan; plan != nil {
		if err := addDeliveries(tx, l.seq, plan.Direct, at); err != nil {
			return err
		}
		for _, op := range plan.Debounce {
			if err := applyDebounce(tx, op, l.seq, at); err != nil {
				return err
			}
		}
	}
	st.counts.Accepted(&l.head, l.plan)
	st.ids[string(key)] = txID{exp: l.exp, over: over}
	st.opened = st.opened || !l.plan.Empty()
	return nil
}

// loggedCommitted puts the ids of recs, applied by a durable commit, in
// the index, before the tail lets go of them.
func (d *DB) loggedCommitted(recs []*logged, st *txState) {
	for _, l := range recs {
		d.ids.add(l.key, l.exp, st.ids[string(l.key)].over)
		d.maybeTrain()
	}
}

// remembered reports whether key is remembered and unexpired at t. Only
// an index hit costs a read transaction (to confirm it). It reads the
// data file as it is, without waiting for the tail: the intake checks
// the tail itself.
func (d *DB) remembered(key []byte, t int64) bool {
	if exp, ok := d.ids.lookup(key); !ok || exp <= t {
		return false
	}
	var ok bool
	d.rawView(func(tx *bolt.Tx) error {
		exp, _, found := d.ids.find(tx, key)
		ok = found && exp > t
		return nil
	})
	return ok
}

// keyRoom is what the store's keys add, at most, to the names they are
// built from (seqs, times, lengths, separators).
const keyRoom = 64

// checkKeys refuses an event whose id or plan would make a key longer
// than bbolt takes (an entity or order key is the output of a template of
// the body, unbounded): refused before it is logged, since once logged
// and answered it must apply.
func checkKeys(key []byte, plan *app.Plan) error {
	const most = bolt.MaxKeySize - keyRoom
	if len(key) > most {
		return fmt.Errorf("event id too long to store (%d bytes)", len(key))
	}
	if plan == nil {
		return nil
	}
	for _, d := range plan.Direct {
		if len(d.Dest)+len(d.Route)+len(d.OrderKey) > most {
			return fmt.Errorf("order key of route %q too long to store (%d bytes)", d.Route, len(d.OrderKey))
		}
	}
	for _, op := range plan.Debounce {
		for _, to := range op.To {
			if len(op.Route)+len(op.Key)+len(to)+len(op.OrderKey) > most {
				return fmt.Errorf("debounce key of route %q too long to store (%d bytes)", op.Route, len(op.Key)+len(op.OrderKey))
			}
		}
		if len(op.Route)+len(op.Key) > most {
			return fmt.Errorf("debounce key of route %q too long to store (%d bytes)", op.Route, len(op.Key))
		}
	}
	return nil
}
