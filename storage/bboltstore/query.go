package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// maxScan bounds how many events one list page examines when filters are
// selective, so a page never walks the whole history; the caller pages on
// with the returned cursor.
const maxScan = 20000

// ListEvents returns events matching q, newest first, and the cursor for
// the next page (0 when there is none). It walks the seq-ordered events
// backwards from q.Before, starting at q.Until found by binary search, so
// its cost depends on the page, not on how many events are stored.
//
// A query with a body search (q.Q) is SearchEvents' page.
func (d *DB) ListEvents(ctx context.Context, q app.EventQuery) ([]app.EventSummary, uint64, error) {
	if q.Q != "" {
		res, err := d.SearchEvents(ctx, q)
		return res.Rows, res.Next, err
	}
	if q.Limit <= 0 || q.Limit > 500 {
		q.Limit = 50
	}
	var out []app.EventSummary
	var next uint64
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		if q.ID != "" {
			return d.findByID(tx, q, &out)
		}
		events := tx.Bucket(bucketEvents)
		c := events.Cursor()
		var k, v []byte
		switch {
		case q.Before > 0:
			c.Seek(seqKey(q.Before)) // then the one before it
			k, v = c.Prev()
		case !q.Until.IsZero():
			k, v = seekTime(c, q.Until)
		default:
			k, v = c.Last()
		}
		for scanned := 0; k != nil; k, v = c.Prev() {
			if scanned++; scanned > maxScan {
				next = binary.BigEndian.Uint64(k) + 1
				return nil
			}
			at, err := receivedAt(v)
			if err == nil && !q.Until.IsZero() && at.After(q.Until) {
				continue
			}
			if err == nil && !q.Since.IsZero() && at.Before(q.Since) {
				return nil // older from here on
			}
			if len(out) == q.Limit {
				next = binary.BigEndian.Uint64(k) + 1
				return nil
			}
			row, ok, err := summarize(tx, k, v, q)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, row)
			}
		}
		return nil
	})
	return out, next, err
}

// seekTime positions c at the newest event received at or before t, by
// binary search over seqs (arrival order follows seq).
func seekTime(c *bolt.Cursor, t time.Time) ([]byte, []byte) {
	fk, _ := c.First()
	lk, lv := c.Last()
	if fk == nil {
		return nil, nil
	}
	if at, _ := receivedAt(lv); !at.After(t) {
		return lk, lv
	}
	lo, hi := binary.BigEndian.Uint64(fk), binary.BigEndian.Uint64(lk)
	for lo < hi { // find the first seq whose event is after t
		mid := lo + (hi-lo)/2
		k, v := c.Seek(seqKey(mid))
		if at, _ := receivedAt(v); at.After(t) {
			hi = binary.BigEndian.Uint64(k)
		} else {
			lo = binary.BigEndian.Uint64(k) + 1
		}
	}
	c.Seek(seqKey(lo))
	return c.Prev()
}

func (d *DB) findByID(tx *bolt.Tx, q app.EventQuery, out *[]app.EventSummary) error {
	sources := []string{q.Source}
	if q.Source == "" {
		sources = d.ids.sourceList()
	}
	for _, src := range sources {
		_, entry, ok := d.ids.find(tx, idKey(src, q.ID))
		if !ok {
			continue
		}
		seq, err := expirySeq(entry)
		if err != nil {
			return err
		}
		ek := seqKey(seq)
		if ev := tx.Bucket(bucketEvents).Get(ek); ev != nil {
			row, ok, err := summarize(tx, ek, ev, app.EventQuery{Status: q.Status, Topic: q.Topic})
			if err != nil {
				return err
			}
			if ok {
				*out = append(*out, row)
			}
		}
	}
	return nil
}

// summarize decodes an event's list row and tells whether it matches q.
// An event that cannot be decoded is a row of its own, "unreadable", in
// lists that filter on nothing it would say.
func summarize(tx *bolt.Tx, k, v []byte, q app.EventQuery) (app.EventSummary, bool, error) {
	e, size, err := eventHead(v)
	if err != nil {
		row := app.EventSummary{Seq: binary.BigEndian.Uint64(k), Size: len(v), Status: app.StateUnreadable}
		row.ReceivedAt, _ = receivedAt(v)
		return row, q.Source == "" && q.Topic == "" && (q.Status == "" || q.Status == app.StateUnreadable), nil
	}
	if q.Source != "" && e.name.Source != q.Source || q.Topic != "" && !app.Glob(q.Topic, e.name.Topic) {
		return app.EventSummary{}, false, nil
	}
	status, err := eventStatus(tx, k)
	if err != nil {
		return app.EventSummary{}, false, err
	}
	if q.Status != "" && status != q.Status {
		return app.EventSummary{}, false, nil
	}
	var until time.Time
	if status == app.StateWaiting {
		until = waitingUntil(tx, k)
	}
	return app.EventSummary{Seq: binary.BigEndian.Uint64(k), Source: e.name.Source, ID: e.name.ID, Topic: e.name.Topic,
		ReceivedAt: e.at, Size: size, Status: status, WaitingUntil: until}, true, nil
}

// eventStatus is app.EventWord of an event's deliveries (dead, failing,
// pending, delivered); when it has none, "merged" when debouncing folded
// it into another event that went out, "waiting" when it is the event of a
// debounced delivery whose window is open, else "unrouted".
func eventStatus(tx *bolt.Tx, k []byte) (string, error) {
	var ds []*app.Delivery
	c := tx.Bucket(bucketEventDlv).Cursor()
	for dk, _ := c.Seek(k); dk != nil && bytes.HasPrefix(dk, k); dk, _ = c.Next() {
		dl, err := getDelivery(tx, binary.BigEndian.Uint64(dk[8:]))
		if err != nil {
			continue // cannot be read: on the poison list once it is due
		}
		ds = append(ds, dl)
	}
	if w := app.EventWord(ds); w != "" {
		return w, nil
	}
	if tx.Bucket(bucketMerged).Get(k) != nil {
		return app.StateMerged, nil
	}
	if tx.Bucket(bucketPendingEvent).Get(k) != nil {
		return app.StateWaiting, nil
	}
	return app.StateUnrouted, nil
}

// waitingUntil is when the pending delivery of event k is due (zero if
// it cannot be read).
func waitingUntil(tx *bolt.Tx, k []byte) time.Time {
	ek := tx.Bucket(bucketPendingEvent).Get(k)
	if ek == nil {
		return time.Time{}
	}
	v := tx.Bucket(bucketPending).Get(ek)
	if v == nil {
		return time.Time{}
	}
	p, err := decodePending(v)
	if err != nil {
		return time.Time{}
	}
	return p.Due
}

// eventHead decodes what a list row shows of an encoded event: its name,
// received time and body length; a packed one's from its plain head,
// without unpacking it.
func eventHead(v []byte) (eventRow, int, error) {
	if len(v) > 0 && v[0] == eventPacked {
		_, bodyLen, _, _, _, err := packedHead(v)
		if err != nil {
			return eventRow{}, 0, err
		}
		r, err := decodeEventRow(v)
		return r, int(bodyLen), err
	}
	e, err := decodeEvent(v)
	if err != nil {
		return eventRow{}, 0, err
	}
	return eventRow{name: app.EventName{Source: e.Source, ID: e.ID, Topic: e.Topic}, at: e.ReceivedAt}, len(e.Body), nil
}
