package bboltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// bucketCounts holds the status page's hourly counts: hour(8, unix hours,
// big-endian) → encoded app.Counts. Files from before it get it at Open;
// the format stays 2, since an older build ignores the bucket.
var bucketCounts = []byte("counts")

// countsVersion is the first byte of an encoded app.Counts.
const countsVersion = 1

// encodeCounts writes c as its version and one uvarint per kind.
func encodeCounts(c *app.Counts) []byte {
	b := make([]byte, 1, 1+len(c)*3)
	b[0] = countsVersion
	for _, n := range c {
		b = binary.AppendUvarint(b, n)
	}
	return b
}

// decodeCounts reads what encodeCounts wrote. Kinds a newer build added
// after the ones this build knows are ignored; missing ones are zero.
func decodeCounts(b []byte) (app.Counts, error) {
	var c app.Counts
	if len(b) == 0 || b[0] != countsVersion {
		return c, errors.New("counts: unknown version")
	}
	b = b[1:]
	for k := range c {
		if len(b) == 0 {
			break
		}
		n, w := binary.Uvarint(b)
		if w <= 0 {
			return c, errors.New("counts: bad number")
		}
		c[k], b = n, b[w:]
	}
	return c, nil
}

// hourKey is the key of unix hour h.
func hourKey(h int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(h)) }

// counter holds the counts that are not written yet and that no write
// carries: those AddCounts and AddNamed took (pending) and, while a
// commit carries them, those (flight, written by the write transaction
// flightTx). The tallies' rules are the domain's (app.CountTally). A
// write's own counts are its transaction's (txState.counts).
type counter struct {
	mu       sync.Mutex
	pending  app.CountTally
	flight   app.CountTally
	flying   bool // a commit carries flight
	flightTx int
}

func newCounter() *counter { return &counter{} }

// add adds c to hour h of m.
func add(m map[int64]*app.Counts, h int64, c app.Counts) {
	if cur := m[h]; cur != nil {
		cur.Add(c)
		return
	}
	m[h] = &c
}

// AddCounts adds c to the hour of at; the next commit writes it.
func (d *DB) AddCounts(at time.Time, c app.Counts) {
	d.counts.mu.Lock()
	d.counts.pending.Add(app.Hour(at), c)
	d.counts.mu.Unlock()
}

// writeCounts adds the transaction's count changes (delta, as the domain
// computed them for its writes) and what AddCounts holds to the counts
// buckets, at the end of the committer's transaction tx: one Put per hour
// touched, usually one. fold is the committer's, emptied here. What it
// takes from pending is in flight until settleCounts says how the commit
// went.
func (d *DB) writeCounts(tx *bolt.Tx, delta *app.CountDelta, fold *countFold) error {
	fold.fold(delta)
	all, named, lasts := fold.all, fold.named, fold.lasts
	d.counts.mu.Lock()
	if !d.counts.pending.Empty() {
		d.counts.flight, d.counts.flying, d.counts.flightTx = d.counts.pending.Take(), true, tx.ID()
		for h, c := range d.counts.flight.Hours {
			add(all, h, *c)
		}
		for hn, n := range d.counts.flight.Named {
			named[hn] += n
		}
	}
	d.counts.mu.Unlock()
	if len(all) > 0 {
		if err := putCounts(tx, all); err != nil {
			return err
		}
	}
	if len(named) > 0 {
		if err := putNamed(tx, named); err != nil {
			return err
		}
	}
	if len(lasts) > 0 {
		return putLasts(tx, lasts)
	}
	return nil
}

// countFold is a transaction's count changes summed by hour, and by hour
// and name, with the latest of each last: what writeCounts writes. The
// committer keeps one and empties it for each commit, so that a commit
// does not build three maps.
type countFold struct {
	all   map[int64]*app.Counts
	named map[app.HourName]uint64
	lasts map[app.Named]app.Last
	spare []*app.Counts // the hours' counts of the last commit, for reuse
}

func newCountFold() *countFold {
	return &countFold{all: map[int64]*app.Counts{}, named: map[app.HourName]uint64{}, lasts: map[app.Named]app.Last{}}
}

// fold empties f, then sums delta into it and keeps the latest of each
// last (on a tie, the one noted later).
func (f *countFold) fold(delta *app.CountDelta) {
	for _, c := range f.all {
		f.spare = append(f.spare, c)
	}
	clear(f.all)
	clear(f.named)
	clear(f.lasts)
	for _, k := range delta.Kinds {
		h := app.Hour(k.At)
		c := f.all[h]
		if c == nil {
			if n := len(f.spare); n > 0 {
				c, f.spare = f.spare[n-1], f.spare[:n-1]
				*c = app.Counts{}
			} else {
				c = new(app.Counts)
			}
			f.all[h] = c
		}
		c[k.Kind] += k.N
	}
	for _, n := range delta.Named {
		f.named[app.HourName{Hour: app.Hour(n.At), Named: app.Named{Kind: n.Kind, Name: n.Name}}] += n.N
	}
	for _, l := range delta.Lasts {
		key := app.Named{Kind: l.Kind, Name: l.Name}
		if cur, ok := f.lasts[key]; !ok || !l.Last.At.Before(cur.At) {
			f.lasts[key] = l.Last
		}
	}
}

// putCounts adds each hour's counts of m to the bucket.
func putCounts(tx *bolt.Tx, m map[int64]*app.Counts) error {
	b := tx.Bucket(bucketCounts)
	for h, c := range m {
		k := hourKey(h)
		sum := *c
		if v := b.Get(k); v != nil {
			if old, err := decodeCounts(v); err == nil {
				sum.Add(old)
			} // else: a record this build cannot read is replaced
		}
		if err := b.Put(k, encodeCounts(&sum)); err != nil {
			return err
		}
	}
	return nil
}

// settleCounts ends the commit that ran writeCounts: what was in flight
// is given back to pending when the commit failed (the transaction's own
// counts are rolled back with their writes).
func (d *DB) settleCounts(committed bool) {
	d.counts.mu.Lock()
	if !committed {
		d.counts.pending.AddTally(d.counts.flight)
	}
	d.counts.flight, d.counts.flying = app.CountTally{}, false
	d.counts.mu.Unlock()
}

// HourlyCounts returns the counts of the hours from from's to to's, both
// included, oldest first, with what AddCounts holds added.
func (d *DB) HourlyCounts(ctx context.Context, from, to time.Time) ([]app.HourCounts, error) {
	first, last := app.Hour(from), app.Hour(to)
	byHour := map[int64]*app.Counts{}
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketCounts).Cursor()
		for k, v := c.Seek(hourKey(first)); k != nil; k, v = c.Next() {
			if len(k) != 8 || int64(binary.BigEndian.Uint64(k)) > last {
				break
			}
			h := int64(binary.BigEndian.Uint64(k))
			n, err := decodeCounts(v)
			if err != nil {
				continue // unreadable: that hour shows what is pending only
			}
			add(byHour, h, n)
		}
		// What this view's snapshot does not hold yet: pending, and the
		// flight of a commit newer than the snapshot.
		d.counts.mu.Lock()
		defer d.counts.mu.Unlock()
		d.counts.pending.HoursInto(byHour, first, last)
		if d.counts.flying && tx.ID() < d.counts.flightTx {
			d.counts.flight.HoursInto(byHour, first, last)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hourly counts: %w", err)
	}
	return app.HourlyOf(byHour, first, last), nil
}

// PruneCounts forgets the hours that end at or before t, written or
// pending.
func (d *DB) PruneCounts(ctx context.Context, t time.Time) (int, error) {
	end := app.Hour(t) // hours before this one have ended by t
	var n int
	err := d.update(ctx, func(tx *bolt.Tx) error {
		n = 0
		b := tx.Bucket(bucketCounts)
		var keys [][]byte
		c := b.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) == 8 && int64(binary.BigEndian.Uint64(k)) >= end {
				break
			}
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		if err := pruneNamed(tx, end); err != nil {
			return err
		}
		// Before writeCounts, at the transaction's end, takes them.
		d.counts.mu.Lock()
		d.counts.pending.Prune(end)
		d.counts.mu.Unlock()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune counts: %w", err)
	}
	return n, nil
}

// flushCounts writes what AddCounts holds, at Close, after the committer
// stopped.
func (d *DB) flushCounts() error {
	d.counts.mu.Lock()
	taken := d.counts.pending.Take()
	d.counts.mu.Unlock()
	if taken.Empty() {
		return nil
	}
	return d.updateDirect(func(tx *bolt.Tx) error {
		if err := putCounts(tx, taken.Hours); err != nil {
			return err
		}
		return putNamed(tx, taken.Named)
	})
}
