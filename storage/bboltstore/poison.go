package bboltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// bucketPoison lists the records set aside because they could not be
// decoded: id(8) → encoded poison record. Events and deliveries stay where
// they are (only the indexes that would read them again let go of them);
// a pending delivery, which would fail its entity's next event, moves
// here whole.
var bucketPoison = []byte("poison")

const poisonVersion = 1

// maxPoisonRaw bounds the bytes of a record kept with its poison entry.
const maxPoisonRaw = 64 << 10

func encodePoison(p *app.Poison, raw []byte) []byte {
	raw = raw[:min(len(raw), maxPoisonRaw)]
	b := make([]byte, 0, 32+len(p.Kind)+len(p.Key)+len(p.Reason)+len(p.Destination)+len(raw))
	b = append(b, poisonVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(p.At.UnixNano()))
	b = appendString(b, p.Kind)
	b = appendString(b, p.Key)
	b = appendString(b, p.Reason)
	b = binary.BigEndian.AppendUint64(b, p.Delivery)
	b = appendString(b, p.Destination)
	return appendString(b, string(raw))
}

func decodePoison(id uint64, b []byte) (app.Poison, error) {
	d := decoder{b: b}
	if v := d.byte(); v != poisonVersion {
		return app.Poison{}, fmt.Errorf("%w: poison version %d", errCorrupt, v)
	}
	p := app.Poison{ID: id, At: time.Unix(0, int64(d.uint64()))}
	p.Kind = string(d.bytes())
	p.Key = string(d.bytes())
	p.Reason = string(d.bytes())
	p.Delivery = d.uint64()
	p.Destination = string(d.bytes())
	d.bytes() // the record's bytes, for whoever repairs it
	return p, d.err
}

// setAside puts p (with the record's bytes raw, when they leave their
// bucket) on the poison list in tx.
func setAside(tx *bolt.Tx, p app.Poison, raw []byte, now time.Time) error {
	b := tx.Bucket(bucketPoison)
	id, err := b.NextSequence()
	if err != nil {
		return err
	}
	p.At = now
	return b.Put(seqKey(id), encodePoison(&p, raw))
}

// setAsidePending moves the pending delivery of entity ek, whose record v
// could not be decoded (err), to the poison list, with its due index
// entries: the entity's next event opens a new one.
func setAsidePending(tx *bolt.Tx, ek, v []byte, err error, now time.Time) error {
	route, key, _ := cutZero(ek)
	p := app.Poison{Kind: "pending delivery", Key: fmt.Sprintf("route %q, key %q", route, key), Reason: err.Error()}
	if err := setAside(tx, p, v, now); err != nil {
		return err
	}
	if err := tx.Bucket(bucketPending).Delete(ek); err != nil {
		return err
	}
	// Its due time is in the record that cannot be read: find its entries.
	var keys [][]byte
	c := tx.Bucket(bucketPendingDue).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) == 8+len(ek) && string(k[8:]) == string(ek) {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	for _, k := range keys {
		if err := tx.Bucket(bucketPendingDue).Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Poisoned returns up to limit of the records set aside, newest first,
// and how many there are.
func (d *DB) Poisoned(ctx context.Context, limit int) ([]app.Poison, int, error) {
	var out []app.Poison
	var total int
	err := d.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPoison)
		total = b.Stats().KeyN
		c := b.Cursor()
		for k, v := c.Last(); k != nil && len(out) < limit; k, v = c.Prev() {
			p, err := decodePoison(binary.BigEndian.Uint64(k), v)
			if err != nil {
				p = app.Poison{ID: binary.BigEndian.Uint64(k), Kind: "poison record", Reason: err.Error()}
			}
			out = append(out, p)
		}
		return nil
	})
	return out, total, err
}
