// The attempts: a finished send recorded, its delivery moved on (to
// delivered, to the next step of its schedule, or dead), and replays.

package bboltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// RecordAttempt stores attempt a of delivery id and moves the delivery to
// state, due at due when pending: RecordAttempts for one record.
func (d *DB) RecordAttempt(ctx context.Context, id uint64, a *app.Attempt, state app.DeliveryState, due time.Time) error {
	return d.RecordAttempts(ctx, []app.AttemptRecord{{ID: id, Attempt: a, State: state, Due: due}})[0]
}

// RecordAttempts stores each record's attempt and moves its delivery on, all
// in one write: the dispatcher hands over what its senders finished while
// the last commit was in progress, so attempts cost one queued write and one
// wakeup per commit rather than per delivery. A record whose delivery is
// gone fails alone; a failed commit fails them all.
func (d *DB) RecordAttempts(ctx context.Context, recs []app.AttemptRecord) []error {
	encoded := make([][]byte, len(recs))
	for i, r := range recs {
		encoded[i] = encodeAttempt(r.Attempt)
	}
	errs := make([]error, len(recs))
	err := d.updateTx(ctx, func(tx *bolt.Tx, st *txState) error {
		for i, r := range recs {
			errs[i] = nil // fn may run again (see write)
			dl, err := getDelivery(tx, r.ID)
			if err != nil {
				errs[i] = fmt.Errorf("delivery %d: %w", r.ID, err)
				continue
			}
			if err := unindex(tx, dl); err != nil {
				return err
			}
			a := r.Attempt
			dl.Attempts++
			if !r.Early {
				dl.Tries++
			}
			a.N = dl.Attempts
			if err := tx.Bucket(bucketAttempts).Put(attemptKey(r.ID, dl.Attempts), encoded[i]); err != nil {
				return err
			}
			dl.State, dl.Due, dl.Updated = r.State, r.Due, a.Start.Add(a.Duration)
			dl.LastStatus, dl.LastError = a.Status, a.Error
			if err := putDelivery(tx, dl); err != nil {
				return err
			}
			st.counts.Attempt(dl.Destination, a, r.State, dl.Updated)
		}
		return nil
	}, nil)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
	}
	return errs
}

// Replay makes delivery id pending again, due at now, keeping its history.
// It works on dead and on delivered deliveries; a pending one is left as is.
func (d *DB) Replay(ctx context.Context, id uint64, now time.Time) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		dl, err := getDelivery(tx, id)
		if err != nil {
			return err
		}
		return replay(tx, dl, now)
	})
}

func replay(tx *bolt.Tx, dl *app.Delivery, now time.Time) error {
	if dl.State == app.Pending {
		return nil
	}
	if err := unindex(tx, dl); err != nil {
		return err
	}
	dl.State, dl.Due, dl.Updated, dl.Tries = app.Pending, now, now, 0
	return putDelivery(tx, dl)
}

// ReplayDead makes every dead delivery pending again, due at now, and
// reports how many.
func (d *DB) ReplayDead(ctx context.Context, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := d.updateDirect(func(tx *bolt.Tx) error {
		n = 0
		var ids []uint64
		c := tx.Bucket(bucketDead).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			ids = append(ids, binary.BigEndian.Uint64(k))
		}
		for _, id := range ids {
			dl, err := getDelivery(tx, id)
			if err != nil {
				continue // cannot be read: it stays where it is
			}
			if err := replay(tx, dl, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}
