package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// DeleteEventsBefore deletes at most limit of the oldest events received
// before t whose deliveries are all delivered, with those deliveries, their
// attempts and their merged links. Events with work not yet done are kept
// whatever their age: a pending (due, retrying) or dead delivery, or a
// debounced or rate-limited delivery waiting to send them. An event that
// cannot be read is kept too. Events are keyed by sequence, which follows
// arrival, so the scan stops at the first event that is young enough.
func (d *DB) DeleteEventsBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	d.caughtUp(ctx) // the sweep sees every event answered before it
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := d.updateDirect(func(tx *bolt.Tx) error {
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
		if err := deleteOrderAll(tx, binary.BigEndian.Uint64(dk[8:])); err != nil {
			return err
		}
		if err := tx.Bucket(bucketDeliveries).Delete(dk[8:]); err != nil {
			return err
		}
		if err := tx.Bucket(bucketEventDlv).Delete(dk); err != nil {
			return err
		}
	}
	return tx.Bucket(bucketEvents).Delete(k)
}

// deleteBefore deletes at most limit records of b (none when b is nil),
// the oldest first, whose time, as at reads it from a record, is before t;
// inOrder says b is keyed in time order, so the first record that is not
// before t ends the scan. A record at cannot read stops it with the error.
func deleteBefore(b *bolt.Bucket, t time.Time, limit int, inOrder bool, at func(k, v []byte) (time.Time, error)) (int, error) {
	if b == nil {
		return 0, nil
	}
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil && len(keys) < limit; k, v = c.Next() {
		when, err := at(k, v)
		if err != nil {
			return 0, err
		}
		if when.Before(t) {
			keys = append(keys, bytes.Clone(k))
		} else if inOrder {
			break
		}
	}
	if err := deleteKeys(b, keys); err != nil {
		return 0, err
	}
	return len(keys), nil
}

// deleteKeys deletes keys from b, after the scan that found them (never
// while a cursor walks b). b may be nil when keys is empty.
func deleteKeys(b *bolt.Bucket, keys [][]byte) error {
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
