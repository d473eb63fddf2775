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

// bucketQuarantine holds the sources' quarantines: source, a zero byte,
// the 8-byte big-endian id → quarantineVersion, at (unix ns, 8), size (8),
// client, reason, the number of headers then each name and value, the body
// (uvarint-prefixed strings). The bucket's sequence gives the ids, so one
// source's keys are in the order they were kept. at and size come first so
// that making room reads only them of each record.
var bucketQuarantine = []byte("quarantine")

const quarantineVersion = 1

var _ app.QuarantineStore = (*DB)(nil)

func quarantineKey(source string, id uint64) []byte {
	k := make([]byte, 0, len(source)+9)
	k = append(append(k, source...), 0)
	return binary.BigEndian.AppendUint64(k, id)
}

// quarantinePrefix is the prefix of source's keys.
func quarantinePrefix(source string) []byte { return append([]byte(source), 0) }

func encodeQuarantined(q *app.Quarantined) []byte {
	b := make([]byte, 0, 64+q.Size())
	b = append(b, quarantineVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(q.At.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(q.Size()))
	b = appendString(b, q.Client)
	b = appendString(b, q.Reason)
	b = binary.AppendUvarint(b, uint64(len(q.Header)))
	for _, h := range q.Header {
		b = appendString(appendString(b, h.Name), h.Value)
	}
	return appendString(b, string(q.Body))
}

// decodeQuarantinedHead reads what QuarantineFit needs of a record.
func decodeQuarantinedHead(k, v []byte) (app.QuarantineHeld, error) {
	d := decoder{b: v}
	if d.byte() != quarantineVersion {
		return app.QuarantineHeld{}, fmt.Errorf("quarantined request %x: unknown encoding", k)
	}
	at := time.Unix(0, int64(d.uint64())).UTC()
	size := int64(d.uint64())
	client := string(d.bytes())
	if d.err != nil {
		return app.QuarantineHeld{}, fmt.Errorf("quarantined request %x: %w", k, d.err)
	}
	return app.QuarantineHeld{ID: binary.BigEndian.Uint64(k[len(k)-8:]), At: at, Client: client, Size: size}, nil
}

// decodeQuarantined decodes a whole record, copying it out of v.
func decodeQuarantined(source string, k, v []byte) (app.Quarantined, error) {
	d := decoder{b: v}
	if d.byte() != quarantineVersion {
		return app.Quarantined{}, fmt.Errorf("quarantined request %x: unknown encoding", k)
	}
	q := app.Quarantined{ID: binary.BigEndian.Uint64(k[len(k)-8:]), Source: source}
	q.At = time.Unix(0, int64(d.uint64())).UTC()
	d.uint64() // size
	q.Client = string(d.bytes())
	q.Reason = string(d.bytes())
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
	}
	for i := uint64(0); i < n && d.err == nil; i++ {
		q.Header = append(q.Header, app.HeaderField{Name: string(d.bytes()), Value: string(d.bytes())})
	}
	q.Body = bytes.Clone(d.bytes())
	if d.err != nil {
		return app.Quarantined{}, fmt.Errorf("quarantined request %x: %w", k, d.err)
	}
	return q, nil
}

// heldOf loads source's quarantine as QuarantineFit reads it.
func heldOf(b *bolt.Bucket, source string) ([]app.QuarantineHeld, error) {
	var held []app.QuarantineHeld
	p := quarantinePrefix(source)
	c := b.Cursor()
	for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, v = c.Next() {
		h, err := decodeQuarantinedHead(k, v)
		if err != nil {
			return nil, err
		}
		held = append(held, h)
	}
	return held, nil
}

// KeepQuarantined adds what QuarantineFit takes of qs, in one commit.
func (d *DB) KeepQuarantined(ctx context.Context, qs []*app.Quarantined, l app.QuarantineLimits) ([]bool, error) {
	kept := make([]bool, len(qs))
	ids := make([]uint64, len(qs))
	err := d.updateQuiet(ctx, func(tx *bolt.Tx) error {
		clear(kept)
		b, err := tx.CreateBucketIfNotExists(bucketQuarantine)
		if err != nil {
			return err
		}
		for i, q := range qs {
			held, err := heldOf(b, q.Source)
			if err != nil {
				return err
			}
			ok, evict := app.QuarantineFit(held, q, l)
			if !ok {
				continue
			}
			for _, id := range evict {
				if err := b.Delete(quarantineKey(q.Source, id)); err != nil {
					return err
				}
			}
			id, err := b.NextSequence()
			if err != nil {
				return err
			}
			if err := b.Put(quarantineKey(q.Source, id), encodeQuarantined(q)); err != nil {
				return err
			}
			kept[i], ids[i] = true, id
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, q := range qs {
		if kept[i] {
			q.ID = ids[i]
		}
	}
	return kept, nil
}

// Quarantined returns up to limit of source's kept requests after the id
// after, oldest first.
func (d *DB) Quarantined(ctx context.Context, source string, after uint64, limit int) ([]app.Quarantined, error) {
	var out []app.Quarantined
	err := d.view(ctx, func(tx *bolt.Tx) error {
		out = nil
		b := tx.Bucket(bucketQuarantine)
		if b == nil {
			return nil
		}
		p := quarantinePrefix(source)
		c := b.Cursor()
		for k, v := c.Seek(quarantineKey(source, after+1)); k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Next() {
			q, err := decodeQuarantined(source, k, v)
			if err != nil {
				return err
			}
			out = append(out, q)
		}
		return nil
	})
	return out, err
}

// QuarantineUsage reports how many requests source keeps and their bytes.
func (d *DB) QuarantineUsage(ctx context.Context, source string) (int, int64, error) {
	var n int
	var size int64
	err := d.view(ctx, func(tx *bolt.Tx) error {
		n, size = 0, 0
		b := tx.Bucket(bucketQuarantine)
		if b == nil {
			return nil
		}
		held, err := heldOf(b, source)
		for _, h := range held {
			n++
			size += h.Size
		}
		return err
	})
	return n, size, err
}

// DeleteQuarantined deletes source's requests of ids, all when ids is nil.
func (d *DB) DeleteQuarantined(ctx context.Context, source string, ids []uint64) (int, error) {
	var n int
	err := d.updateQuiet(ctx, func(tx *bolt.Tx) error {
		n = 0
		b := tx.Bucket(bucketQuarantine)
		if b == nil {
			return nil
		}
		var keys [][]byte
		if ids == nil {
			p := quarantinePrefix(source)
			c := b.Cursor()
			for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
				keys = append(keys, bytes.Clone(k))
			}
		}
		for _, id := range ids {
			if k := quarantineKey(source, id); b.Get(k) != nil {
				keys = append(keys, k)
			}
		}
		if err := deleteKeys(b, keys); err != nil {
			return err
		}
		n = len(keys)
		return nil
	})
	return n, err
}

// DeleteQuarantinedBefore deletes at most limit requests that arrived
// before t.
func (d *DB) DeleteQuarantinedBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	var n int
	err := d.updateQuiet(ctx, func(tx *bolt.Tx) error {
		var err error
		n, err = deleteBefore(tx.Bucket(bucketQuarantine), t, limit, false, func(k, v []byte) (time.Time, error) {
			h, err := decodeQuarantinedHead(k, v)
			return h.At, err
		})
		return err
	})
	return n, err
}
