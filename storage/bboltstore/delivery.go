package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// Outbox buckets.
var (
	bucketDeliveries = []byte("deliveries")  // id(8) → encoded delivery
	bucketDue        = []byte("due")         // destination\x00 due(8) id(8) → nil, pending only
	bucketDead       = []byte("dead")        // id(8) → nil
	bucketAttempts   = []byte("attempts")    // id(8) n(4) → encoded attempt
	bucketEventDlv   = []byte("event_deliv") // eventSeq(8) id(8) → nil
)

// ErrNotFound means no record has the given id.
var ErrNotFound = app.ErrNotFound

// deliveryVersion 2 adds the route and the order key after the last
// error; version 1 records (written before routes had rules) still
// decode, with neither.
const deliveryVersion = 2

func encodeDelivery(d *app.Delivery) []byte {
	b := make([]byte, 0, 64+len(d.Destination)+len(d.LastError)+len(d.Route)+len(d.OrderKey))
	b = append(b, deliveryVersion, byte(d.State))
	b = binary.BigEndian.AppendUint64(b, d.EventSeq)
	b = binary.AppendUvarint(b, uint64(d.Attempts))
	b = binary.AppendUvarint(b, uint64(d.Tries))
	b = binary.BigEndian.AppendUint64(b, uint64(d.Due.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(d.Created.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(d.Updated.UnixNano()))
	b = binary.AppendUvarint(b, uint64(d.LastStatus))
	b = appendString(b, d.Destination)
	b = appendString(b, d.LastError)
	b = appendString(b, d.Route)
	return appendString(b, d.OrderKey)
}

func decodeDelivery(id uint64, b []byte) (*app.Delivery, error) {
	dec := decoder{b: b}
	v := dec.byte()
	if v != 1 && v != deliveryVersion {
		return nil, fmt.Errorf("%w: delivery version %d", errCorrupt, v)
	}
	d := &app.Delivery{ID: id, State: app.DeliveryState(dec.byte())}
	d.EventSeq = dec.uint64()
	d.Attempts = int(dec.uvarint())
	d.Tries = int(dec.uvarint())
	d.Due = time.Unix(0, int64(dec.uint64()))
	d.Created = time.Unix(0, int64(dec.uint64()))
	d.Updated = time.Unix(0, int64(dec.uint64()))
	d.LastStatus = int(dec.uvarint())
	d.Destination = string(dec.bytes())
	d.LastError = string(dec.bytes())
	if v >= 2 {
		d.Route = string(dec.bytes())
		d.OrderKey = string(dec.bytes())
	}
	if dec.err != nil {
		return nil, dec.err
	}
	return d, nil
}

// attemptVersion is the encoding of an attempt: version 2 adds a byte of
// flags at the end (attemptProbe); version 1 records still read, as no
// probe.
const attemptVersion = 2

// The flags of an attempt's record.
const attemptProbe = 1 << 0

func encodeAttempt(a *app.Attempt) []byte {
	b := make([]byte, 0, 33+len(a.Error)+len(a.Response))
	b = append(b, attemptVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(a.Start.UnixNano()))
	b = binary.AppendUvarint(b, uint64(a.Duration))
	b = binary.AppendUvarint(b, uint64(a.Status))
	b = appendString(b, a.Error)
	b = appendString(b, string(a.Response))
	var flags byte
	if a.Probe {
		flags |= attemptProbe
	}
	return append(b, flags)
}

func decodeAttempt(n int, b []byte) (*app.Attempt, error) {
	dec := decoder{b: b}
	v := dec.byte()
	if v != 1 && v != attemptVersion {
		return nil, fmt.Errorf("%w: attempt version %d", errCorrupt, v)
	}
	a := &app.Attempt{N: n, Start: time.Unix(0, int64(dec.uint64()))}
	a.Duration = time.Duration(dec.uvarint())
	a.Status = int(dec.uvarint())
	a.Error = string(dec.bytes())
	a.Response = append([]byte(nil), dec.bytes()...)
	if v >= 2 {
		a.Probe = dec.byte()&attemptProbe != 0
	}
	return a, dec.err
}

func dueKey(dest string, due time.Time, id uint64) []byte {
	k := make([]byte, 0, len(dest)+17)
	k = append(k, dest...)
	k = append(k, 0)
	k = binary.BigEndian.AppendUint64(k, uint64(due.UnixNano()))
	return binary.BigEndian.AppendUint64(k, id)
}

func attemptKey(id uint64, n int) []byte {
	return binary.BigEndian.AppendUint32(seqKey(id), uint32(n))
}

// addDeliveries opens one pending delivery, due at once, per direct
// delivery of ds, with its route and order key.
func addDeliveries(tx *bolt.Tx, eventSeq uint64, ds []app.Direct, now time.Time) error {
	return openDeliveries(tx, eventSeq, ds, now, app.Pending, "")
}

// openDeliveries opens one delivery per direct delivery of ds in state,
// due now when pending, with lastError as its reason when dead.
func openDeliveries(tx *bolt.Tx, eventSeq uint64, ds []app.Direct, now time.Time, state app.DeliveryState, lastError string) error {
	dl := tx.Bucket(bucketDeliveries)
	for _, dd := range ds {
		id, err := dl.NextSequence()
		if err != nil {
			return err
		}
		d := &app.Delivery{ID: id, EventSeq: eventSeq, Destination: dd.Dest, Route: dd.Route, OrderKey: dd.OrderKey,
			State: state, Due: now, Created: now, Updated: now, LastError: lastError}
		if state != app.Pending {
			d.Due = time.Time{}
		}
		if err := putDelivery(tx, d); err != nil {
			return err
		}
		if d.OrderKey != "" {
			if err := tx.Bucket(bucketOrderAll).Put(orderKey(d), nil); err != nil {
				return err
			}
		}
		if err := tx.Bucket(bucketEventDlv).Put(append(seqKey(eventSeq), seqKey(id)...), nil); err != nil {
			return err
		}
	}
	return nil
}

// putDelivery writes d and keeps the due, order and dead indexes in step
// with its state. The caller removes d's previous index entries first
// (unindex). Every change of a delivery's state goes through the two, so
// the order index (order.go) holds exactly the pending deliveries that
// have an order key.
func putDelivery(tx *bolt.Tx, d *app.Delivery) error {
	if err := tx.Bucket(bucketDeliveries).Put(seqKey(d.ID), encodeDelivery(d)); err != nil {
		return err
	}
	switch d.State {
	case app.Pending:
		if err := putOrder(tx, d); err != nil {
			return err
		}
		return tx.Bucket(bucketDue).Put(dueKey(d.Destination, d.Due, d.ID), nil)
	case app.Dead:
		return tx.Bucket(bucketDead).Put(seqKey(d.ID), nil)
	}
	return nil
}

// unindex removes d's entry from the due (and order) or dead index.
func unindex(tx *bolt.Tx, d *app.Delivery) error {
	switch d.State {
	case app.Pending:
		if err := deleteOrder(tx, d); err != nil {
			return err
		}
		return tx.Bucket(bucketDue).Delete(dueKey(d.Destination, d.Due, d.ID))
	case app.Dead:
		return tx.Bucket(bucketDead).Delete(seqKey(d.ID))
	}
	return nil
}

func getDelivery(tx *bolt.Tx, id uint64) (*app.Delivery, error) {
	v := tx.Bucket(bucketDeliveries).Get(seqKey(id))
	if v == nil {
		return nil, ErrNotFound
	}
	return decodeDelivery(id, v)
}

// DueDeliveries returns up to limit deliveries to dest due at or before now,
// oldest first, with their events, skipping those for which skip is true (in
// flight). next is the due time of the first pending delivery it did not
// return (zero when there is none), for the dispatcher's timer. A delivery
// that cannot be sent (its record or its event cannot be read, or its
// event is gone) is set aside (setAsideDue), never returned as an error
// that would hold back the rest.
func (d *DB) DueDeliveries(ctx context.Context, dest string, now time.Time, limit int, skip func(uint64) bool) (work []app.Work, next time.Time, err error) {
	return d.readOutbox(ctx, dest, time.Time{}, 0, now, now, limit, skip)
}

// endOfTime is after every due time.
var endOfTime = time.Unix(0, math.MaxInt64)

// WaitingDeliveries returns up to limit pending deliveries to dest after
// (afterDue, afterID) in due order, due or not: see app.Outbox.
func (d *DB) WaitingDeliveries(ctx context.Context, dest string, afterDue time.Time, afterID uint64, limit int, skip func(uint64) bool) ([]app.Work, error) {
	work, _, err := d.readOutbox(ctx, dest, afterDue, afterID, endOfTime, time.Now(), limit, skip)
	return work, err
}

// readOutbox reads dest's pending deliveries in due order, after the
// position (after, afterID) when after is set, up to limit of them due at
// or before until; see DueDeliveries. now dates what it sets aside.
// A delivery held back by its order group (heldBack) is passed over: it
// costs the read of its record and one Seek of the order index on every
// pass while its group's head waits, so a key with thousands of held
// deliveries makes each read of its destination's outbox that much
// longer (PostgreSQL's claim probes likewise, once per held row).
func (d *DB) readOutbox(ctx context.Context, dest string, after time.Time, afterID uint64, until, now time.Time, limit int, skip func(uint64) bool) (work []app.Work, next time.Time, err error) {
	prefix := append([]byte(dest), 0)
	start := prefix
	if !after.IsZero() {
		start = binary.BigEndian.AppendUint64(dueKey(dest, after, afterID), 0) // just past it
	}
	var bad []uint64
	err = d.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.Seek(start); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			if len(k) != len(prefix)+16 {
				return fmt.Errorf("due key %x: %w", k, errCorrupt)
			}
			due := time.Unix(0, int64(binary.BigEndian.Uint64(k[len(prefix):])))
			id := binary.BigEndian.Uint64(k[len(prefix)+8:])
			if skip(id) {
				continue
			}
			if due.After(until) || len(work) >= limit {
				next = due
				return nil
			}
			w, problem := readWork(tx, id)
			if problem != nil {
				bad = append(bad, id)
				continue
			}
			if heldBack(tx, w.Delivery) {
				// Its group's head goes first: passed over, and left out
				// of next, so held work never wakes the dispatcher; the
				// head's record does (or its own due time).
				continue
			}
			work = append(work, w)
		}
		return nil
	})
	if err == nil && len(bad) > 0 {
		// Best effort: what is not set aside now is skipped again next time.
		d.setAsideDue(ctx, bad, now)
	}
	return work, next, err
}

// unsendable says why a pending delivery cannot be sent.
type unsendable struct {
	dl     *app.Delivery // nil when its own record cannot be read
	poison *app.Poison   // the record to set aside, nil when none is (its event is gone)
	reason string        // for the delivery's last error
}

// readWork reads pending delivery id and its event, or says why it cannot
// be sent.
func readWork(tx *bolt.Tx, id uint64) (app.Work, *unsendable) {
	dl, err := getDelivery(tx, id)
	if err != nil {
		p := &app.Poison{Kind: "delivery", Key: fmt.Sprint(id), Reason: err.Error(), Delivery: id}
		return app.Work{}, &unsendable{poison: p}
	}
	ev := tx.Bucket(bucketEvents).Get(seqKey(dl.EventSeq))
	if ev == nil {
		return app.Work{}, &unsendable{dl: dl, reason: fmt.Sprintf("event %d is gone: nothing to send", dl.EventSeq)}
	}
	e, err := decodeEvent(ev)
	if err != nil {
		p := &app.Poison{Kind: "event", Key: fmt.Sprint(dl.EventSeq), Reason: err.Error(), Delivery: id, Destination: dl.Destination}
		return app.Work{}, &unsendable{dl: dl, poison: p,
			reason: fmt.Sprintf("event %d cannot be read (%v): set aside, see the overview", dl.EventSeq, err)}
	}
	e.Seq = dl.EventSeq
	return app.Work{Delivery: dl, Event: e}, nil
}

// setAsideDue takes the pending deliveries ids, which readOutbox could not
// send, out of the due index: one whose event cannot be read or is gone
// is dead-lettered with the reason, one whose own record cannot be read
// only leaves the index (its bytes stay where they are). Each record that
// cannot be decoded goes on the poison list.
func (d *DB) setAsideDue(ctx context.Context, ids []uint64, now time.Time) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		for _, id := range ids {
			_, u := readWork(tx, id) // again: it may have changed since the read
			if u == nil {
				continue
			}
			if u.poison != nil {
				if err := setAside(tx, *u.poison, nil, now); err != nil {
					return err
				}
			}
			if u.dl == nil {
				if err := dropDueKeys(tx, id); err != nil {
					return err
				}
				if err := dropOrderKeys(tx, id); err != nil {
					return err
				}
				continue
			}
			if u.dl.State != app.Pending {
				continue
			}
			if err := unindex(tx, u.dl); err != nil {
				return err
			}
			u.dl.State, u.dl.Updated, u.dl.LastStatus, u.dl.LastError = app.Dead, now, 0, u.reason
			if err := putDelivery(tx, u.dl); err != nil {
				return err
			}
		}
		return nil
	})
}

// dropDueKeys deletes the due index entries of delivery id, whose record
// cannot say its destination and due time: found by a scan of the index,
// which only a record set aside costs.
func dropDueKeys(tx *bolt.Tx, id uint64) error {
	var keys [][]byte
	c := tx.Bucket(bucketDue).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) >= 16 && binary.BigEndian.Uint64(k[len(k)-8:]) == id {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	for _, k := range keys {
		if err := tx.Bucket(bucketDue).Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Delivery returns delivery id and its attempts, oldest first.
func (d *DB) Delivery(ctx context.Context, id uint64) (*app.Delivery, []*app.Attempt, error) {
	var dl *app.Delivery
	var attempts []*app.Attempt
	err := d.view(ctx, func(tx *bolt.Tx) error {
		var err error
		if dl, err = getDelivery(tx, id); err != nil {
			return err
		}
		prefix := seqKey(id)
		c := tx.Bucket(bucketAttempts).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			a, err := decodeAttempt(int(binary.BigEndian.Uint32(k[8:])), v)
			if err != nil {
				return err
			}
			attempts = append(attempts, a)
		}
		return nil
	})
	return dl, attempts, err
}

// EventDeliveries returns the deliveries of event seq.
func (d *DB) EventDeliveries(ctx context.Context, seq uint64) ([]*app.Delivery, error) {
	var out []*app.Delivery
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		prefix := seqKey(seq)
		c := tx.Bucket(bucketEventDlv).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			dl, err := getDelivery(tx, binary.BigEndian.Uint64(k[8:]))
			if err != nil {
				continue // cannot be read: on the poison list once it is due
			}
			out = append(out, dl)
		}
		return nil
	})
	return out, err
}

// DeadLetters returns up to limit dead deliveries with ids above after,
// in id order, and the total number of dead deliveries.
func (d *DB) DeadLetters(ctx context.Context, after uint64, limit int) ([]*app.Delivery, int, error) {
	var out []*app.Delivery
	var total int
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		dead := tx.Bucket(bucketDead)
		total = dead.Stats().KeyN
		c := dead.Cursor()
		for k, _ := c.Seek(seqKey(after + 1)); k != nil && len(out) < limit; k, _ = c.Next() {
			dl, err := getDelivery(tx, binary.BigEndian.Uint64(k))
			if err != nil {
				continue // cannot be read: the page lists the others
			}
			out = append(out, dl)
		}
		return nil
	})
	return out, total, err
}

// CountDead returns the number of dead deliveries.
func (d *DB) CountDead(ctx context.Context) (int, error) {
	var n int
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketDead).Stats().KeyN
		return nil
	})
	return n, err
}

// CountPending returns the number of pending deliveries, debounced ones
// included.
func (d *DB) CountPending(ctx context.Context) (int, error) {
	var n int
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		n = tx.Bucket(bucketDue).Stats().KeyN + tx.Bucket(bucketPending).Stats().KeyN
		return nil
	})
	return n, err
}

// CountRetrying returns how many deliveries are failing (app.DeliveryWord:
// pending after an attempt, waiting for a retry), counting at most limit.
func (d *DB) CountRetrying(ctx context.Context, limit int) (int, error) {
	var n int
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.First(); k != nil && n < limit; k, _ = c.Next() {
			if len(k) < 8 {
				continue
			}
			dl, err := getDelivery(tx, binary.BigEndian.Uint64(k[len(k)-8:]))
			if err == nil && app.DeliveryWord(dl) == app.StateFailing {
				n++
			}
		}
		return nil
	})
	return n, err
}

// Backlog returns how many deliveries to dest are pending, counting at
// most limit.
func (d *DB) Backlog(ctx context.Context, dest string, limit int) (int, error) {
	var n int
	prefix := append([]byte(dest), 0)
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketDue).Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < limit; k, _ = c.Next() {
			n++
		}
		return nil
	})
	return n, err
}
