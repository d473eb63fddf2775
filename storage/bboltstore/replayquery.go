// Replay by query: the finished deliveries a query selects, found in one
// read, and the write that makes the ones the replay selected pending
// again (app/replay runs it, in bounded writes).

package bboltstore

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// ReplayCandidates finds the dead or delivered deliveries q selects, at
// most q.Limit of them (the first in accept order), in one read; the
// replay's selection and its writes are the caller's (app.SelectReplay,
// Requeue). A body search (q.Q) reads every body the other filters leave,
// without the time budget of SearchEvents (a replay must not miss what it
// was asked for, and its dry run must select what the run replays): it is
// bounded by q.Limit matches and by ctx, looked at every
// app.SearchCheckBytes read, so a caller who leaves stops it.
func (d *DB) ReplayCandidates(ctx context.Context, q app.ReplayQuery) ([]app.ReplayItem, bool, error) {
	q, err := q.Check()
	if err != nil {
		return nil, false, err
	}
	var items []app.ReplayItem
	var more bool
	err = d.viewCaught(ctx, func(tx *bolt.Tx) error {
		var err error
		switch {
		case q.Delivery != 0:
			items, more, err = matchOne(tx, q)
		case q.Status == app.ReplayDead: // the dead index is small and in id order
			items, more, err = matchDead(tx, q, &pacer{ctx: ctx})
		default:
			items, more, err = matchEvents(tx, q, &pacer{ctx: ctx})
		}
		return err
	})
	if err != nil {
		return nil, false, err
	}
	slices.SortFunc(items, func(a, b app.ReplayItem) int { return cmp.Compare(a.Delivery, b.Delivery) })
	return items, more, nil
}

// ReplayPending counts the pending deliveries a replay by q leaves alone
// (app.ReplayQuery.Leaves), walking the events as ReplayCandidates does.
func (d *DB) ReplayPending(ctx context.Context, q app.ReplayQuery) (int, error) {
	q, err := q.Check()
	if err != nil || q.Status != app.ReplayAny {
		return 0, err
	}
	var n int
	err = d.viewCaught(ctx, func(tx *bolt.Tx) error {
		n = 0
		return eachEventDelivery(tx, q, &pacer{ctx: ctx}, func(dl *app.Delivery, _ uint64, ev eventRow) bool {
			if q.Leaves(dl, ev.name, ev.at) {
				n++
			}
			return true
		})
	})
	return n, err
}

// Requeue makes each delivery of ids still in one of the states from
// pending again, due at now, in one write: the due index (destination,
// due, id) sends them in id order, that is accept order. One that left
// those states (replayed by someone else, swept) is left alone and not
// counted.
func (d *DB) Requeue(ctx context.Context, ids []uint64, from []app.DeliveryState, now time.Time) (int, error) {
	var n int
	err := d.update(ctx, func(tx *bolt.Tx) error {
		n = 0 // fn may run again (see write)
		for _, id := range ids {
			dl, err := getDelivery(tx, id)
			if err != nil || !slices.Contains(from, dl.State) {
				continue // gone, unreadable, or no longer in a state to replay
			}
			if err := replay(tx, dl, now); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// matchOne returns delivery q.Delivery when q selects it.
func matchOne(tx *bolt.Tx, q app.ReplayQuery) ([]app.ReplayItem, bool, error) {
	dl, err := getDelivery(tx, q.Delivery)
	if err != nil {
		return nil, false, nil // gone or unreadable: nothing to replay
	}
	v := tx.Bucket(bucketEvents).Get(seqKey(dl.EventSeq))
	if v == nil {
		return nil, false, nil
	}
	ev, err := decodeEventRow(v)
	if err != nil || !q.Matches(dl, ev.name, ev.at) || q.Q != "" && !bodyHas(v, app.NewSearch(q.Q), new([]byte)) {
		return nil, false, nil
	}
	return []app.ReplayItem{{Delivery: dl.ID, Destination: dl.Destination, State: dl.State, EventSeq: dl.EventSeq, Event: ev.name}}, false, nil
}

// matchDead returns the dead deliveries q selects, in id order, and
// whether more than q.Limit matched.
func matchDead(tx *bolt.Tx, q app.ReplayQuery, p *pacer) ([]app.ReplayItem, bool, error) {
	var items []app.ReplayItem
	names := map[uint64]eventRow{}
	found := map[uint64]bool{} // the events whose body has q.Q
	search := app.NewSearch(q.Q)
	var buf []byte // bodyHas's room
	events := tx.Bucket(bucketEvents)
	c := tx.Bucket(bucketDead).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		dl, err := getDelivery(tx, binary.BigEndian.Uint64(k))
		if err != nil || q.Destination != "" && dl.Destination != q.Destination {
			continue // cannot be read: it stays where it is
		}
		ev, ok := names[dl.EventSeq]
		if !ok {
			v := events.Get(seqKey(dl.EventSeq))
			if v == nil {
				continue // its event is gone: nothing to send
			}
			if err := p.read(unpackedSize(v)); err != nil {
				return nil, false, err
			}
			if ev, err = decodeEventRow(v); err != nil {
				continue
			}
			names[dl.EventSeq] = ev
			found[dl.EventSeq] = q.Q == "" || bodyHas(v, search, &buf)
		}
		if !found[dl.EventSeq] || !q.Matches(dl, ev.name, ev.at) {
			continue
		}
		if len(items) == q.Limit {
			return items, true, nil
		}
		items = append(items, app.ReplayItem{Delivery: dl.ID, Destination: dl.Destination, State: dl.State, EventSeq: dl.EventSeq, Event: ev.name})
	}
	return items, false, nil
}

// matchEvents returns the dead or delivered deliveries q selects by
// walking the events from q.Since and each one's deliveries
// (eachEventDelivery), and whether more than q.Limit matched.
func matchEvents(tx *bolt.Tx, q app.ReplayQuery, p *pacer) ([]app.ReplayItem, bool, error) {
	var items []app.ReplayItem
	more := false
	err := eachEventDelivery(tx, q, p, func(dl *app.Delivery, seq uint64, ev eventRow) bool {
		if !q.Matches(dl, ev.name, ev.at) {
			return true
		}
		if len(items) == q.Limit {
			more = true
			return false
		}
		items = append(items, app.ReplayItem{Delivery: dl.ID, Destination: dl.Destination, State: dl.State, EventSeq: seq, Event: ev.name})
		return true
	})
	return items, more, err
}

// eachEventDelivery calls fn with each delivery of each event q's event
// filters (time, source, topic, body) select, walking the events from
// q.Since (found by binary search) in seq order, until fn returns false.
func eachEventDelivery(tx *bolt.Tx, q app.ReplayQuery, p *pacer, fn func(dl *app.Delivery, seq uint64, ev eventRow) bool) error {
	c := tx.Bucket(bucketEvents).Cursor()
	var k, v []byte
	if q.Since.IsZero() {
		k, v = c.First()
	} else if k, _ = seekTime(c, q.Since.Add(-1)); k == nil {
		k, v = c.First() // every event is at or after Since
	} else {
		k, v = c.Next()
	}
	dc := tx.Bucket(bucketEventDlv).Cursor()
	search := app.NewSearch(q.Q)
	var buf []byte // bodyHas's room
	for ; k != nil; k, v = c.Next() {
		if err := p.read(unpackedSize(v)); err != nil {
			return err
		}
		ev, err := decodeEventRow(v)
		if err != nil {
			continue // unreadable: on the poison list, not replayable by query
		}
		if !q.Until.IsZero() && ev.at.After(q.Until) {
			break // arrival follows seq: later ones are later still
		}
		if !q.MatchesEvent(ev.name, ev.at) || q.Q != "" && !bodyHas(v, search, &buf) {
			continue
		}
		seq := binary.BigEndian.Uint64(k)
		for dk, _ := dc.Seek(k); dk != nil && bytes.HasPrefix(dk, k); dk, _ = dc.Next() {
			dl, err := getDelivery(tx, binary.BigEndian.Uint64(dk[8:]))
			if err != nil {
				continue
			}
			if !fn(dl, seq, ev) {
				return nil
			}
		}
	}
	return nil
}

// eventRow is an event's name and received time, decoded without its
// headers and body.
type eventRow struct {
	name app.EventName
	at   time.Time
}

// decodeEventRow reads the start of an encoded event (see encodeEvent):
// its received time, source, id and topic, copied out of the transaction.
func decodeEventRow(b []byte) (eventRow, error) {
	at, err := receivedAt(b)
	if err != nil {
		return eventRow{}, err
	}
	dec := decoder{b: b[9:]}
	r := eventRow{at: at}
	r.name.Source = string(dec.bytes())
	r.name.ID = string(dec.bytes())
	r.name.Topic = string(dec.bytes())
	return r, dec.err
}

// EventNames returns the source, id and topic of each event of seqs that
// is stored (and can be read).
func (d *DB) EventNames(ctx context.Context, seqs []uint64) (map[uint64]app.EventName, error) {
	out := make(map[uint64]app.EventName, len(seqs))
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		clear(out)
		events := tx.Bucket(bucketEvents)
		for _, seq := range seqs {
			if v := events.Get(seqKey(seq)); v != nil {
				if r, err := decodeEventRow(v); err == nil {
					out[seq] = r.name
				}
			}
		}
		return nil
	})
	return out, err
}

// pacer looks at a long read's ctx every app.SearchCheckBytes or
// app.SearchCheckEvents it reads, whichever comes first: a caller who
// leaves stops a scan of large bodies within milliseconds.
type pacer struct {
	ctx        context.Context
	bytes, evs int
}

// read counts an event of n bytes and returns ctx's error when it is time
// to look and ctx is done.
func (p *pacer) read(n int) error {
	p.bytes += n
	p.evs++
	if p.bytes < app.SearchCheckBytes && p.evs < app.SearchCheckEvents {
		return nil
	}
	p.bytes, p.evs = 0, 0
	return p.ctx.Err()
}
