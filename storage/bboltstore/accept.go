package bboltstore

import (
	"context"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// Accept checks and records e's id, stores e, opens one delivery per
// direct destination of plan and applies its debounced routes, all in one
// write transaction, group-committed with
// concurrent calls. It returns only after the commit's fsync, so an
// acknowledged event survives a crash with its deliveries.
func (d *DB) Accept(ctx context.Context, e *app.Event, idExpires time.Time, plan *app.Plan) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	key := idKey(e.Source, e.ID)
	// A remembered, unexpired id stays remembered (the sweep only forgets
	// expired ones), so a read transaction can answer most duplicates
	// without queueing for a commit; a miss is decided in the write below.
	if d.remembered(key, e.ReceivedAt) {
		return true, nil
	}
	rec := d.packEvent(e)
	exp := idExpires.UnixNano()
	var dup, over bool
	var seq uint64
	// The committer may run this function more than once: it only sets results.
	err := d.updateTx(ctx, func(tx *bolt.Tx, st *txState) error {
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
			d.maybeTrain()
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
	d.view(context.Background(), func(tx *bolt.Tx) error {
		exp, _, found := d.ids.find(tx, key)
		ok = found && exp > t.UnixNano()
		return nil
	})
	return ok
}
