// The order index: deliveries of a route with the same order key go to a
// destination one at a time, in id order (the order their events were
// accepted, or their debounce windows ended). The index holds one key per
// pending delivery that has an order key, so the head of a group (its
// lowest pending id) is one Seek away and the outbox reads pass over the
// rest of the group (readOutbox).

package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// bucketOrder is destination\x00 route\x00 len(orderKey) orderKey id(8)
// → nil, for pending deliveries with an order key only. The order key is
// taken from the event (a template of its body or headers) and may hold
// any byte, a zero too: its length, not a terminator, ends it, so that
// one group's keys are never a prefix of another's.
var bucketOrder = []byte("order")

// bucketOrderAll has the same keys for every delivery with an order key,
// whatever its state, from its opening until retention deletes it: what
// the page reads to name the delivery before one in its group. One more
// key per ordered delivery, written once.
var bucketOrderAll = []byte("order_all")

// orderPrefix is the part of the order index keys shared by the group of
// d (its destination, route and order key).
func orderPrefix(d *app.Delivery) []byte {
	k := make([]byte, 0, len(d.Destination)+len(d.Route)+len(d.OrderKey)+2+binary.MaxVarintLen64+8)
	k = append(k, d.Destination...)
	k = append(k, 0)
	k = append(k, d.Route...)
	k = append(k, 0)
	return appendString(k, d.OrderKey)
}

func orderKey(d *app.Delivery) []byte {
	return binary.BigEndian.AppendUint64(orderPrefix(d), d.ID)
}

// putOrder indexes pending delivery d when it has an order key.
func putOrder(tx *bolt.Tx, d *app.Delivery) error {
	if d.OrderKey == "" {
		return nil
	}
	return tx.Bucket(bucketOrder).Put(orderKey(d), nil)
}

// deleteOrder removes d's entry; the caller knows d is pending.
func deleteOrder(tx *bolt.Tx, d *app.Delivery) error {
	if d.OrderKey == "" {
		return nil
	}
	return tx.Bucket(bucketOrder).Delete(orderKey(d))
}

// orderHead returns the lowest pending id of d's group (0 when d has no
// order key or the group has no pending delivery): one Seek.
func orderHead(tx *bolt.Tx, d *app.Delivery) uint64 {
	if d.OrderKey == "" {
		return 0
	}
	prefix := orderPrefix(d)
	k, _ := tx.Bucket(bucketOrder).Cursor().Seek(prefix)
	if len(k) != len(prefix)+8 || !bytes.HasPrefix(k, prefix) {
		return 0
	}
	return binary.BigEndian.Uint64(k[len(prefix):])
}

// previousInGroup returns the delivery before d in its group (the highest
// lower id), nil when there is none or d has no order key.
func previousInGroup(tx *bolt.Tx, d *app.Delivery) (*app.Delivery, error) {
	if d.OrderKey == "" {
		return nil, nil
	}
	prefix := orderPrefix(d)
	c := tx.Bucket(bucketOrderAll).Cursor()
	k, _ := c.Seek(orderKey(d))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Prev() {
		if len(k) != len(prefix)+8 {
			continue
		}
		id := binary.BigEndian.Uint64(k[len(prefix):])
		if id >= d.ID {
			continue
		}
		prev, err := getDelivery(tx, id)
		if err != nil {
			return nil, nil // cannot be read: the page says nothing of it
		}
		return prev, nil
	}
	return nil, nil
}

// PreviousInGroup returns the delivery before dl in its order group (same
// destination, route and order key; the highest lower id), nil when dl
// has no order key or is the group's first.
func (d *DB) PreviousInGroup(ctx context.Context, dl *app.Delivery) (*app.Delivery, error) {
	var prev *app.Delivery
	err := d.view(ctx, func(tx *bolt.Tx) error {
		var err error
		prev, err = previousInGroup(tx, dl)
		return err
	})
	return prev, err
}

// deleteOrderAll removes delivery id's entry of the group index, for
// retention (deleteEvent); one read of its record.
func deleteOrderAll(tx *bolt.Tx, id uint64) error {
	d, err := getDelivery(tx, id)
	if err != nil || d.OrderKey == "" {
		return nil // cannot be read: its entry, if any, only names a gone delivery
	}
	return tx.Bucket(bucketOrderAll).Delete(orderKey(d))
}

// heldBack reports whether pending delivery d waits for an earlier
// delivery of its group: one due later, retrying or in flight.
func heldBack(tx *bolt.Tx, d *app.Delivery) bool {
	head := orderHead(tx, d)
	return head != 0 && head < d.ID
}

// dropOrderKeys deletes the order index entries of delivery id, whose
// record cannot be read: a scan of the index, which only a record set
// aside costs (see dropDueKeys).
func dropOrderKeys(tx *bolt.Tx, id uint64) error {
	var keys [][]byte
	c := tx.Bucket(bucketOrder).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) >= 8 && binary.BigEndian.Uint64(k[len(k)-8:]) == id {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	for _, k := range keys {
		if err := tx.Bucket(bucketOrder).Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// reindexOrder builds the order indexes of a file that has none (one an
// older build wrote): the pending one from the due index (a read of every
// pending delivery), the group index from every delivery record (a look
// at the version byte of each, a decode of those new enough to have an
// order key). Open calls it; it costs that once, when a bucket is made.
func reindexOrder(db *bolt.DB) error {
	var pending, all bool
	if err := db.View(func(tx *bolt.Tx) error {
		pending, all = tx.Bucket(bucketOrder) != nil, tx.Bucket(bucketOrderAll) != nil
		return nil
	}); err != nil || pending && all {
		return err
	}
	if !all {
		err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucket(bucketOrderAll)
			if err != nil {
				return err
			}
			return tx.Bucket(bucketDeliveries).ForEach(func(k, v []byte) error {
				if len(k) != 8 || len(v) == 0 || v[0] < 2 {
					return nil // version 1: no order key
				}
				d, err := decodeDelivery(binary.BigEndian.Uint64(k), v)
				if err != nil || d.OrderKey == "" {
					return nil
				}
				return b.Put(orderKey(d), nil)
			})
		})
		if err != nil || pending {
			return err
		}
	}
	return db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucket(bucketOrder); err != nil {
			return err
		}
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) < 8 {
				continue
			}
			d, err := getDelivery(tx, binary.BigEndian.Uint64(k[len(k)-8:]))
			if err != nil || d.State != app.Pending {
				continue // set aside when it falls due (readOutbox)
			}
			if err := putOrder(tx, d); err != nil {
				return err
			}
		}
		return nil
	})
}
