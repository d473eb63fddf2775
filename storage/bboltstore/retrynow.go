// Retry now: waiting deliveries made due at once (issue 28). A delivery's
// due time is part of its due index key (dueKey), which the outbox reads
// by, so moving it is an unindex, a new due time and a putDelivery in one
// write, as every change of a delivery is.

package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// RetryNow makes the waiting deliveries ids due at now, keeping their
// attempts and tries, and reports how many it moved: see
// app.ReplayStore.RetryNow. One in flight is safe to move: the dispatcher
// holds it in hand (its skip of the outbox reads) until its attempt is
// recorded, and the record reads the delivery again, so it is sent once.
func (d *DB) RetryNow(ctx context.Context, ids []uint64, now time.Time) (int, error) {
	var n int
	var refused error
	err := d.update(ctx, func(tx *bolt.Tx) error {
		n, refused = 0, nil // fn may run again (see write)
		var move []*app.Delivery
		seen := map[uint64]bool{}
		for _, id := range ids {
			if seen[id] {
				continue // once each, as PostgreSQL's id = ANY($1) counts it
			}
			seen[id] = true
			dl, err := getDelivery(tx, id)
			if errors.Is(err, ErrNotFound) {
				refused = app.RetryNowNotFound(id)
				return nil // refused before any change: the group's commit goes on, not rolled back for it
			}
			if err != nil {
				return err
			}
			due, err := app.RetryNowVerdict(dl, now)
			if err != nil {
				refused = err
				return nil
			}
			if due {
				move = append(move, dl)
			}
		}
		for _, dl := range move {
			if err := dueNow(tx, dl, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if refused != nil {
		return 0, refused
	}
	return n, nil
}

// RetryDestination makes every waiting delivery to dest (pending, due
// after now) due at now and reports how many it moved: the due index is
// ordered by due time, so the waiting ones are those after now's position.
func (d *DB) RetryDestination(ctx context.Context, dest string, now time.Time) (int, error) {
	var n int
	prefix := append([]byte(dest), 0)
	err := d.update(ctx, func(tx *bolt.Tx) error {
		n = 0 // fn may run again (see write)
		var ids []uint64
		c := tx.Bucket(bucketDue).Cursor()
		// Just past every key due at now: the first one due after it.
		start := binary.BigEndian.AppendUint64(dueKey(dest, now, ^uint64(0)), 0)
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(k) != len(prefix)+16 {
				continue // not a key of this destination's (a longer name's, or damaged)
			}
			ids = append(ids, binary.BigEndian.Uint64(k[len(prefix)+8:]))
		}
		for _, id := range ids { // collected first: no writes under the cursor
			dl, err := getDelivery(tx, id)
			if err != nil {
				continue // cannot be read: set aside when it falls due (readOutbox)
			}
			if due, _ := app.RetryNowVerdict(dl, now); !due {
				continue
			}
			if err := dueNow(tx, dl, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// dueNow moves pending delivery dl's due time to now, in the due index too.
func dueNow(tx *bolt.Tx, dl *app.Delivery, now time.Time) error {
	if err := unindex(tx, dl); err != nil {
		return err
	}
	dl.Due = now
	return putDelivery(tx, dl)
}
