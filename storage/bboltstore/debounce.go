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

// Debounce buckets. An entity key is route\x00key.
var (
	bucketPending    = []byte("pending")     // entity → encoded pending delivery
	bucketPendingDue = []byte("pending_due") // due(8) entity → nil
	bucketWindow     = []byte("window")      // entity → rate-limit window: length(8) then send times(8 each)
	bucketMerged     = []byte("merged")      // firedEventSeq(8) mergedEventSeq(8) → nil, and mergedEventSeq(8) → firedEventSeq(8)
	// pendingEvent indexes the event each pending delivery will send, so
	// that retention keeps it (DeleteEventsBefore) however long the wait.
	bucketPendingEvent = []byte("pending_event") // eventSeq(8) → entity
)

// pending is a debounced delivery waiting for its key's window to pass.
type pending struct {
	Due      time.Time
	EventSeq uint64 // the latest event: its body and headers win
	Deferred bool   // opened by the rate limit: its send takes a slot
	Merged   []uint64
	To       []string
	// OrderKey is the order group on the route of the event that opened
	// it: the fired deliveries keep it (and the route, from the entity key).
	OrderKey string
}

// pendingVersion 2 adds the order key at the end; version 1 records
// still decode, with none.
const pendingVersion = 2

func encodePending(p *pending) []byte {
	b := []byte{pendingVersion, 0}
	if p.Deferred {
		b[1] = 1
	}
	b = binary.BigEndian.AppendUint64(b, uint64(p.Due.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, p.EventSeq)
	b = binary.AppendUvarint(b, uint64(len(p.To)))
	for _, d := range p.To {
		b = appendString(b, d)
	}
	b = binary.AppendUvarint(b, uint64(len(p.Merged)))
	for _, s := range p.Merged {
		b = binary.BigEndian.AppendUint64(b, s)
	}
	return appendString(b, p.OrderKey)
}

func decodePending(b []byte) (*pending, error) {
	d := decoder{b: b}
	v := d.byte()
	if v != 1 && v != pendingVersion {
		return nil, fmt.Errorf("%w: pending version %d", errCorrupt, v)
	}
	p := &pending{Deferred: d.byte() == 1}
	p.Due = time.Unix(0, int64(d.uint64()))
	p.EventSeq = d.uint64()
	n := d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		p.To = append(p.To, string(d.bytes()))
	}
	n = d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		p.Merged = append(p.Merged, d.uint64())
	}
	if v >= 2 {
		p.OrderKey = string(d.bytes())
	}
	return p, d.err
}

func entityKey(route, key string) []byte {
	return append(append(append(make([]byte, 0, len(route)+1+len(key)), route...), 0), key...)
}

// window is a key's rate-limit window: the times of its recent sends.
type window struct {
	Length time.Duration
	Times  []time.Time
}

func decodeWindow(b []byte) window {
	var w window
	if len(b) < 8 || len(b)%8 != 0 {
		return w // a corrupt window only loosens the limit once
	}
	w.Length = time.Duration(binary.BigEndian.Uint64(b))
	for i := 8; i < len(b); i += 8 {
		w.Times = append(w.Times, time.Unix(0, int64(binary.BigEndian.Uint64(b[i:]))))
	}
	return w
}

func (w window) encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+8*len(w.Times)), uint64(w.Length))
	for _, t := range w.Times {
		b = binary.BigEndian.AppendUint64(b, uint64(t.UnixNano()))
	}
	return b
}

func putWindow(tx *bolt.Tx, ek []byte, w window) error {
	if len(w.Times) == 0 {
		return tx.Bucket(bucketWindow).Delete(ek)
	}
	return tx.Bucket(bucketWindow).Put(ek, w.encode())
}

// applyDebounce carries out one debounced route for event seq at now: it
// loads the key's pending delivery and rate-limit window, asks the domain
// (app.DecideDebounce) and saves what it says.
func applyDebounce(tx *bolt.Tx, op *app.DebounceOp, seq uint64, now time.Time) error {
	ek := entityKey(op.Route, op.Key)
	pb := tx.Bucket(bucketPending)
	var p *pending
	if v := pb.Get(ek); v != nil {
		var err error
		if p, err = decodePending(v); err != nil {
			// Set aside, or every event of this entity would fail; this one
			// opens a new pending delivery below.
			if err := setAsidePending(tx, ek, v, err, now); err != nil {
				return err
			}
			p = nil
		}
	}
	var w window
	if op.Limit > 0 {
		w = decodeWindow(tx.Bucket(bucketWindow).Get(ek))
	}
	dec := app.DecideDebounce(op, p != nil, w.Times, now)
	op.Result = dec.Result
	if dec.Result == app.Merged {
		return mergePending(tx, ek, p, seq)
	}
	if dec.Limited {
		if err := putWindow(tx, ek, window{Length: op.Window, Times: dec.Sends}); err != nil {
			return err
		}
	}
	p = &pending{EventSeq: seq, To: op.To, Due: dec.Due, Deferred: dec.Result == app.Deferred, OrderKey: op.OrderKey}
	if err := pb.Put(ek, encodePending(p)); err != nil {
		return err
	}
	if err := tx.Bucket(bucketPendingEvent).Put(seqKey(seq), ek); err != nil {
		return err
	}
	return tx.Bucket(bucketPendingDue).Put(timeKey(p.Due, ek), nil)
}

// mergePending merges event seq into entity ek's pending delivery p: the
// latest event wins, the one it replaces is remembered.
func mergePending(tx *bolt.Tx, ek []byte, p *pending, seq uint64) error {
	p.Merged = app.KeepMerged(p.Merged, p.EventSeq)
	if err := tx.Bucket(bucketPendingEvent).Delete(seqKey(p.EventSeq)); err != nil {
		return err
	}
	// The replaced event is merged from now on (the page says so while the
	// window is open); the link points to the latest event until the send
	// records the one that went out.
	if err := tx.Bucket(bucketMerged).Put(seqKey(p.EventSeq), seqKey(seq)); err != nil {
		return err
	}
	p.EventSeq = seq
	if err := tx.Bucket(bucketPendingEvent).Put(seqKey(seq), ek); err != nil {
		return err
	}
	return tx.Bucket(bucketPending).Put(ek, encodePending(p))
}

// firePendingChunk bounds one FirePending transaction.
const firePendingChunk = 1000

// FirePending turns pending deliveries due by now into deliveries to their
// destinations, records which events they merged, and frees their keys. A
// deferred one takes its slot in the window as it fires.
func (d *DB) FirePending(ctx context.Context, now time.Time) (map[string]int, time.Time, error) {
	// Look first in a read transaction: the dispatcher asks on every pass,
	// and an empty write transaction would still cost a commit and fsync.
	var next time.Time
	var due bool
	err := d.view(ctx, func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bucketPendingDue).Cursor().First(); k != nil {
			next = time.Unix(0, int64(binary.BigEndian.Uint64(k)))
			due = !next.After(now)
		}
		return nil
	})
	// Events the tail holds may merge into a pending delivery, or open
	// one due already: the write applies them first, then fires.
	if err != nil || !due && !d.tailDebounces() {
		return nil, next, err
	}
	var fired map[string]int
	err = d.updateTx(ctx, func(tx *bolt.Tx, st *txState) error {
		fired, next = map[string]int{}, time.Time{}
		var keys [][]byte
		c := tx.Bucket(bucketPendingDue).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			at := time.Unix(0, int64(binary.BigEndian.Uint64(k)))
			if at.After(now) || len(keys) >= firePendingChunk {
				next = at
				break
			}
			keys = append(keys, append([]byte(nil), k...))
		}
		for _, k := range keys {
			if err := firePending(tx, k, now, fired); err != nil {
				return err
			}
		}
		st.counts.Fired(now, fired)
		return nil
	}, nil)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("fire pending deliveries: %w", err)
	}
	return fired, next, nil
}

func firePending(tx *bolt.Tx, dueKey []byte, now time.Time, fired map[string]int) error {
	ek := dueKey[8:]
	if err := tx.Bucket(bucketPendingDue).Delete(dueKey); err != nil {
		return err
	}
	v := tx.Bucket(bucketPending).Get(ek)
	if v == nil {
		return nil
	}
	p, err := decodePending(v)
	if err != nil {
		return setAsidePending(tx, ek, v, err, now)
	}
	if err := tx.Bucket(bucketPending).Delete(ek); err != nil {
		return err
	}
	if err := tx.Bucket(bucketPendingEvent).Delete(seqKey(p.EventSeq)); err != nil {
		return err
	}
	if p.Deferred {
		w := decodeWindow(tx.Bucket(bucketWindow).Get(ek))
		if w.Length > 0 {
			w.Times = app.TakeSlot(w.Times, w.Length, now)
			if err := putWindow(tx, ek, w); err != nil {
				return err
			}
		}
	}
	for _, m := range p.Merged {
		// Both ways: what a delivered event replaced, and what replaced an event.
		if err := tx.Bucket(bucketMerged).Put(append(seqKey(p.EventSeq), seqKey(m)...), nil); err != nil {
			return err
		}
		if err := tx.Bucket(bucketMerged).Put(seqKey(m), seqKey(p.EventSeq)); err != nil {
			return err
		}
	}
	route, _, _ := cutZero(ek)
	ds := make([]app.Direct, len(p.To))
	for i, dest := range p.To {
		ds[i] = app.Direct{Dest: dest, Route: route, OrderKey: p.OrderKey}
	}
	if tx.Bucket(bucketEvents).Get(seqKey(p.EventSeq)) == nil {
		// Retention keeps the event a pending delivery will send; it can
		// only be gone from a damaged file or one an older build swept.
		// Nothing can be sent, but the loss is put where it is seen.
		reason := fmt.Sprintf("event %d was gone when its debounce window ended (key %q); nothing could be sent", p.EventSeq, ek)
		return openDeliveries(tx, p.EventSeq, ds, now, app.Dead, reason)
	}
	fired[route]++
	return addDeliveries(tx, p.EventSeq, ds, now)
}

// reindexPending rebuilds the index of the events pending deliveries will
// send where it differs from the pending deliveries (a file an older
// build wrote, which knew no index): Open calls it, and writes nothing
// when the two agree.
func reindexPending(db *bolt.DB) error {
	want := map[string][]byte{}
	var stale [][]byte
	err := db.View(func(tx *bolt.Tx) error {
		err := tx.Bucket(bucketPending).ForEach(func(ek, v []byte) error {
			p, err := decodePending(v)
			if err != nil {
				return nil // set aside when it falls due (FirePending)
			}
			want[string(seqKey(p.EventSeq))] = append([]byte(nil), ek...)
			return nil
		})
		if err != nil {
			return err
		}
		return tx.Bucket(bucketPendingEvent).ForEach(func(k, v []byte) error {
			if ek, ok := want[string(k)]; ok && bytes.Equal(ek, v) {
				delete(want, string(k)) // in place
			} else {
				stale = append(stale, append([]byte(nil), k...))
			}
			return nil
		})
	})
	if err != nil || len(want) == 0 && len(stale) == 0 {
		return err
	}
	return db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketPendingEvent)
		for _, k := range stale {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		for k, ek := range want {
			if err := b.Put([]byte(k), ek); err != nil {
				return err
			}
		}
		return nil
	})
}

func cutZero(b []byte) (string, string, bool) {
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), string(b[i+1:]), true
		}
	}
	return string(b), "", false
}

// PruneWindows deletes at most limit rate-limit windows whose every send
// left the window by now, and reports how many.
func (d *DB) PruneWindows(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var n int
	err := d.updateDirect(func(tx *bolt.Tx) error {
		n = 0
		var keys [][]byte
		c := tx.Bucket(bucketWindow).Cursor()
		for k, v := c.First(); k != nil && len(keys) < limit; k, v = c.Next() {
			w := decodeWindow(v)
			if len(app.PruneSends(w.Times, w.Length, now)) == 0 {
				keys = append(keys, append([]byte(nil), k...))
			}
		}
		for _, k := range keys {
			if err := tx.Bucket(bucketWindow).Delete(k); err != nil {
				return err
			}
		}
		n = len(keys)
		return nil
	})
	return n, err
}

// MergedInto returns the seqs of the events merged into event seq's
// delivery by debouncing.
func (d *DB) MergedInto(ctx context.Context, seq uint64) ([]uint64, error) {
	var out []uint64
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		prefix := seqKey(seq)
		c := tx.Bucket(bucketMerged).Cursor()
		for k, _ := c.Seek(prefix); len(k) == 16 && string(k[:8]) == string(prefix); k, _ = c.Next() {
			out = append(out, binary.BigEndian.Uint64(k[8:]))
		}
		return nil
	})
	return out, err
}

// CarriedBy returns the event whose delivery carries merged event seq
// (bucketMerged's mergedEventSeq → firedEventSeq), 0 for none. While the
// window is open an event's link names the one that replaced it, which a
// later one may have replaced in turn: it follows the links to the
// latest (at most MaxMergedKept+1 of them, the most a window records).
func (d *DB) CarriedBy(ctx context.Context, seq uint64) (uint64, error) {
	var out uint64
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketMerged)
		for range app.MaxMergedKept + 1 {
			v := b.Get(seqKey(seq))
			if len(v) != 8 {
				break
			}
			out = binary.BigEndian.Uint64(v)
			seq = out
		}
		return nil
	})
	return out, err
}

// PendingCount returns the number of pending (debounced) deliveries.
func (d *DB) PendingCount(ctx context.Context) (int, error) {
	var n int
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketPending).Stats().KeyN
		return nil
	})
	return n, err
}
