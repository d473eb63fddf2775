// The order index: deliveries of a route with the same order key go to a
// destination one at a time, in id order (the order their events were
// accepted, or their debounce windows ended). The index holds one key per
// pending delivery that has an order key, so the head of a group (its
// lowest pending id) is one Seek away and the outbox reads pass over the
// rest of the group (readOutbox).

package bboltstore

import (
	"bytes"
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

// reindexOrder builds the order index of a file that has none (one an
// older build wrote) from the due index: Open calls it, and it costs a
// read of every pending delivery once, when the bucket is made.
func reindexOrder(db *bolt.DB) error {
	exists := false
	if err := db.View(func(tx *bolt.Tx) error { exists = tx.Bucket(bucketOrder) != nil; return nil }); err != nil || exists {
		return err
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
