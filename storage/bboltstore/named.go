package bboltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// bucketNamed holds the overview's counts by name: hour(8, unix hours,
// big-endian) | kind(1) | name → version(1) | uvarint count. The hour
// comes first so that a commit touches the keys of the current hour
// only, at the end of the bucket, and the sweep deletes from its start.
var bucketNamed = []byte("counts_by_name")

// bucketLast holds one small record per source (its last accepted event)
// and per destination (its last failed attempt): kind(1) | name →
// version(1) | varint unix nanoseconds | error text (app.MaxLastText at
// most). It stays small enough to live inline in its parent page.
var bucketLast = []byte("last")

// namedVersion is the first byte of a named count and of a last record.
const namedVersion = 1

func namedKey(h int64, n app.Named) []byte {
	k := make([]byte, 9, 9+len(n.Name))
	binary.BigEndian.PutUint64(k, uint64(h))
	k[8] = byte(n.Kind)
	return append(k, n.Name...)
}

func lastKey(n app.Named) []byte { return append([]byte{byte(n.Kind)}, n.Name...) }

func decodeNamed(v []byte) (uint64, error) {
	if len(v) < 2 || v[0] != namedVersion {
		return 0, errors.New("named count: unknown version")
	}
	n, w := binary.Uvarint(v[1:])
	if w <= 0 {
		return 0, errors.New("named count: bad number")
	}
	return n, nil
}

func encodeLast(l app.Last) []byte {
	b := binary.AppendVarint([]byte{namedVersion}, l.At.UnixNano())
	return append(b, l.Text...)
}

func decodeLast(v []byte) (app.Last, error) {
	if len(v) < 2 || v[0] != namedVersion {
		return app.Last{}, errors.New("last: unknown version")
	}
	ns, w := binary.Varint(v[1:])
	if w <= 0 {
		return app.Last{}, errors.New("last: bad time")
	}
	return app.Last{At: time.Unix(0, ns).UTC(), Text: string(v[1+w:])}, nil
}

// AddNamed adds n to (k, name) in the hour of at; the next commit writes it.
func (d *DB) AddNamed(at time.Time, k app.NameKind, name string, n uint64) {
	d.counts.mu.Lock()
	d.counts.pending.AddNamed(app.Hour(at), app.Named{Kind: k, Name: name}, n)
	d.counts.mu.Unlock()
}

// putNamed adds m's counts to the bucket.
func putNamed(tx *bolt.Tx, m map[app.HourName]uint64) error {
	b := tx.Bucket(bucketNamed)
	for hn, n := range m {
		k := namedKey(hn.Hour, hn.Named)
		if v := b.Get(k); v != nil {
			if old, err := decodeNamed(v); err == nil {
				n += old
			} // else: a record this build cannot read is replaced
		}
		if err := b.Put(k, binary.AppendUvarint([]byte{namedVersion}, n)); err != nil {
			return err
		}
	}
	return nil
}

// putLasts writes each of m that is not older than the one kept.
func putLasts(tx *bolt.Tx, m map[app.Named]app.Last) error {
	b := tx.Bucket(bucketLast)
	for n, l := range m {
		k := lastKey(n)
		if v := b.Get(k); v != nil {
			if old, err := decodeLast(v); err == nil && l.At.Before(old.At) {
				continue
			}
		}
		if err := b.Put(k, encodeLast(l)); err != nil {
			return err
		}
	}
	return nil
}

// NamedCounts sums the counts by name of the hours from from's to to's,
// both included, with what AddNamed holds.
func (d *DB) NamedCounts(ctx context.Context, from, to time.Time) (map[app.Named]uint64, error) {
	first, last := app.Hour(from), app.Hour(to)
	out := map[app.Named]uint64{}
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketNamed).Cursor()
		for k, v := c.Seek(hourKey(first)); k != nil; k, v = c.Next() {
			if len(k) < 9 || int64(binary.BigEndian.Uint64(k)) > last {
				break
			}
			n, err := decodeNamed(v)
			if err != nil {
				continue // unreadable: that count shows what is pending only
			}
			out[app.Named{Kind: app.NameKind(k[8]), Name: string(k[9:])}] += n
		}
		// What this view's snapshot does not hold yet (see HourlyCounts).
		d.counts.mu.Lock()
		defer d.counts.mu.Unlock()
		d.counts.pending.NamedInto(out, first, last)
		if d.counts.flying && tx.ID() < d.counts.flightTx {
			d.counts.flight.NamedInto(out, first, last)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("counts by name: %w", err)
	}
	return out, nil
}

// Lasts returns the last accepted event of each source and the last
// failed attempt of each destination.
func (d *DB) Lasts(ctx context.Context) (map[app.Named]app.Last, error) {
	out := map[app.Named]app.Last{}
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLast).ForEach(func(k, v []byte) error {
			if len(k) < 1 {
				return nil
			}
			if l, err := decodeLast(v); err == nil {
				out[app.Named{Kind: app.NameKind(k[0]), Name: string(k[1:])}] = l
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("lasts: %w", err)
	}
	return out, nil
}

// pruneNamed deletes the counts by name of the hours before end, in tx.
func pruneNamed(tx *bolt.Tx, end int64) error {
	b := tx.Bucket(bucketNamed)
	var keys [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) >= 8 && int64(binary.BigEndian.Uint64(k)) >= end {
			break
		}
		keys = append(keys, append([]byte(nil), k...))
	}
	for _, k := range keys {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
