// Replay by query: the finished deliveries a query selects, found in one
// read and made pending again in bounded writes.

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

// ReplayQuery finds the dead or delivered deliveries q selects, at most
// q.Limit of them (the first in accept order), and unless q.DryRun makes
// them pending again, all due at now, app.ReplayBatch per write: the
// writer is never held for the whole of a large replay, and the due index
// (destination, due, id) sends them in id order, that is accept order.
// A delivery that left the state it was matched in before its batch is
// written (replayed by someone else, swept) is left alone and not counted.
// A body search (q.Q) reads every body the other filters leave, without
// the time budget of SearchEvents (a replay must not miss what it was
// asked for, and its dry run must select what the run replays): it is
// bounded by q.Limit matches and by ctx, looked at every
// app.SearchCheckBytes read, so a caller who leaves stops it.
func (d *DB) ReplayQuery(ctx context.Context, q app.ReplayQuery, now time.Time) (app.ReplayResult, error) {
	q, err := q.Check()
	if err != nil {
		return app.ReplayResult{}, err
	}
	var items []app.ReplayItem
	var more bool
	err = d.view(ctx, func(tx *bolt.Tx) error {
		var err error
		switch {
		case q.Delivery != 0:
			items, err = matchOne(tx, q)
		case q.Status == app.ReplayDead: // the dead index is small and in id order
			items, more, err = matchDead(tx, q, &pacer{ctx: ctx})
		default:
			items, more, err = matchEvents(tx, q, &pacer{ctx: ctx})
		}
		return err
	})
	if err != nil {
		return app.ReplayResult{}, err
	}
	slices.SortFunc(items, func(a, b app.ReplayItem) int { return cmp.Compare(a.Delivery, b.Delivery) })
	res := app.ReplayResult{Matched: len(items), More: more, First: items[:min(len(items), app.ReplayFirstShown)]}
	for _, it := range items {
		if it.State == app.Delivered {
			res.Delivered++
		}
	}
	if q.DryRun {
		return res, nil
	}
	for start := 0; start < len(items); start += app.ReplayBatch {
		batch := items[start:min(start+app.ReplayBatch, len(items))]
		var n int
		err := d.update(ctx, func(tx *bolt.Tx) error {
			n = 0 // fn may run again (see write)
			for _, it := range batch {
				dl, err := getDelivery(tx, it.Delivery)
				if err != nil || !q.Wants(dl.State) {
					continue // gone, unreadable, or no longer dead or delivered
				}
				if err := replay(tx, dl, now); err != nil {
					return err
				}
				n++
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		res.Replayed += n
	}
	return res, nil
}

// matchOne returns delivery q.Delivery when q selects it.
func matchOne(tx *bolt.Tx, q app.ReplayQuery) ([]app.ReplayItem, error) {
	dl, err := getDelivery(tx, q.Delivery)
	if err != nil {
		return nil, nil // gone or unreadable: nothing to replay
	}
	v := tx.Bucket(bucketEvents).Get(seqKey(dl.EventSeq))
	if v == nil {
		return nil, nil
	}
	ev, err := decodeEventRow(v)
	if err != nil || !q.Matches(dl, ev.name, ev.at) || q.Q != "" && !bodyHas(v, app.NewSearch(q.Q)) {
		return nil, nil
	}
	return []app.ReplayItem{{Delivery: dl.ID, Destination: dl.Destination, State: dl.State, EventSeq: dl.EventSeq, Event: ev.name}}, nil
}

// matchDead returns the dead deliveries q selects, in id order, and
// whether more than q.Limit matched.
func matchDead(tx *bolt.Tx, q app.ReplayQuery, p *pacer) ([]app.ReplayItem, bool, error) {
	var items []app.ReplayItem
	names := map[uint64]eventRow{}
	found := map[uint64]bool{} // the events whose body has q.Q
	search := app.NewSearch(q.Q)
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
			if err := p.read(len(v)); err != nil {
				return nil, false, err
			}
			if ev, err = decodeEventRow(v); err != nil {
				continue
			}
			names[dl.EventSeq] = ev
			found[dl.EventSeq] = q.Q == "" || bodyHas(v, search)
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
// walking the events from q.Since (found by binary search) in seq order
// and each one's deliveries, and whether more than q.Limit matched.
func matchEvents(tx *bolt.Tx, q app.ReplayQuery, p *pacer) ([]app.ReplayItem, bool, error) {
	var items []app.ReplayItem
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
	for ; k != nil; k, v = c.Next() {
		if err := p.read(len(v)); err != nil {
			return nil, false, err
		}
		ev, err := decodeEventRow(v)
		if err != nil {
			continue // unreadable: on the poison list, not replayable by query
		}
		if !q.Until.IsZero() && ev.at.After(q.Until) {
			break // arrival follows seq: later ones are later still
		}
		if !q.MatchesEvent(ev.name, ev.at) || q.Q != "" && !bodyHas(v, search) {
			continue
		}
		seq := binary.BigEndian.Uint64(k)
		for dk, _ := dc.Seek(k); dk != nil && bytes.HasPrefix(dk, k); dk, _ = dc.Next() {
			dl, err := getDelivery(tx, binary.BigEndian.Uint64(dk[8:]))
			if err != nil || !q.Matches(dl, ev.name, ev.at) {
				continue
			}
			if len(items) == q.Limit {
				return items, true, nil
			}
			items = append(items, app.ReplayItem{Delivery: dl.ID, Destination: dl.Destination, State: dl.State, EventSeq: seq, Event: ev.name})
		}
	}
	return items, false, nil
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
	err := d.view(ctx, func(tx *bolt.Tx) error {
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
