// Body search (issue 29): bbolt has no index of bodies, so a search reads
// them newest first inside one read transaction, within a budget, and
// says how far it looked.

package bboltstore

import (
	"context"
	"encoding/binary"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// SetSearchBudget replaces app.DefaultSearchBudget for this store's body
// searches (a zero field keeps the default's): for tests and measurements.
func (d *DB) SetSearchBudget(b app.SearchBudget) {
	if b.Events <= 0 {
		b.Events = app.DefaultSearchBudget.Events
	}
	if b.Time <= 0 {
		b.Time = app.DefaultSearchBudget.Time
	}
	d.budget.Store(&b)
}

// SetSearchTime sets the time of this store's body searches (0: the
// default's), keeping their budget of events.
func (d *DB) SetSearchTime(t time.Duration) {
	b := d.searchBudget()
	b.Time = t
	d.SetSearchBudget(b)
}

// searchBudget is the budget of this store's body searches.
func (d *DB) searchBudget() app.SearchBudget {
	if b := d.budget.Load(); b != nil {
		return *b
	}
	return app.DefaultSearchBudget
}

// SearchEvents returns the events whose body contains q.Q (ASCII letters
// in either case) and that q's other filters select, newest first, from
// q.Before or q.Until as ListEvents does. It examines at most the store's
// search budget of events (200,000 or 1 s by default, the clock and ctx
// looked at every app.SearchCheckBytes read); a page cut short by it says
// so in SearchedUntil, and Next goes on from there. A ctx done (the caller
// left) ends it with ctx's error. A plain body is compared where it lies
// in the transaction's pages, a packed one unpacked into a room reused
// from one to the next: nothing is allocated per event, and only matches
// are decoded. The bodies are unpacked and matched a batch at a time on
// two cores (searchbatch.go), the events then taken in order.
func (d *DB) SearchEvents(ctx context.Context, q app.EventQuery) (app.EventSearch, error) {
	if err := app.CheckSearch(q.Q); err != nil {
		return app.EventSearch{}, err
	}
	if q.Limit <= 0 || q.Limit > 500 {
		q.Limit = 50
	}
	search := app.NewSearch(q.Q)
	budget := d.searchBudget()
	var res app.EventSearch
	var buf []byte // a packed body's room, reused
	var batch []candidate
	err := d.viewCaught(ctx, func(tx *bolt.Tx) error {
		res = app.EventSearch{}
		events := tx.Bucket(bucketEvents)
		if q.ID != "" {
			var rows []app.EventSummary
			if err := d.findByID(tx, q, &rows); err != nil {
				return err
			}
			for _, r := range rows {
				res.Searched++
				if body, ok := eventBody(events.Get(seqKey(r.Seq)), &buf); ok && search.In(body) {
					res.Rows = append(res.Rows, r)
				}
			}
			return nil
		}
		c := events.Cursor()
		var k, v []byte
		switch {
		case q.Before > 0:
			c.Seek(seqKey(q.Before))
			k, v = c.Prev()
		case !q.Until.IsZero():
			k, v = seekTime(c, q.Until)
		default:
			k, v = c.Last()
		}
		deadline := time.Now().Add(budget.Time)
		var oldest time.Time
		var read, seen int // bytes and events read since the last look at the clock
		m := newMatcher(search, q.Since, q.Until)
		defer m.stop()
		for k != nil {
			// The next batch's bodies matched on every core; then the
			// events taken in order, as if each were matched in its turn.
			batch = batch[:0]
			bytes := 0
			for ; k != nil && len(batch) < batchEvents && (len(batch) == 0 || bytes < app.SearchCheckBytes); k, v = c.Prev() {
				size := unpackedSize(v)
				batch = append(batch, candidate{k: k, v: v, size: size})
				bytes += size
			}
			m.match(batch)
			for _, e := range batch {
				if len(res.Rows) == q.Limit {
					res.Next = binary.BigEndian.Uint64(e.k) + 1
					return nil
				}
				if res.Searched == budget.Events {
					res.Next, res.SearchedUntil, res.Stopped = binary.BigEndian.Uint64(e.k)+1, oldest, true
					return nil
				}
				// The clock and the caller are looked at by the bytes read, not
				// only by the events: a 1 MB body is 4,000 of 256 bytes.
				if read >= app.SearchCheckBytes || seen == app.SearchCheckEvents {
					read, seen = 0, 0
					if err := ctx.Err(); err != nil {
						return err
					}
					if time.Now().After(deadline) {
						res.Next, res.SearchedUntil, res.Stopped = binary.BigEndian.Uint64(e.k)+1, oldest, true
						return nil
					}
				}
				res.Searched++
				seen++
				read += e.size
				at, err := receivedAt(e.v)
				if err != nil {
					continue // unreadable: no body to search
				}
				oldest = at
				if !q.Until.IsZero() && at.After(q.Until) {
					continue
				}
				if !q.Since.IsZero() && at.Before(q.Since) {
					return nil // older from here on
				}
				if !e.match {
					continue
				}
				row, ok, err := summarize(tx, e.k, e.v, q)
				if err != nil {
					return err
				}
				if ok {
					res.Rows = append(res.Rows, row)
				}
			}
		}
		return nil
	})
	return res, err
}

// eventBody finds the body in an encoded event (see encodeEvent) without
// copying it: the bytes are the transaction's, valid until it ends. Of a
// packed event (pack.go) only the payload is unpacked, into *buf, which
// keeps the room for the next: the body is then valid until the next call
// with buf. ok is false when the record cannot be read.
func eventBody(b []byte, buf *[]byte) (body []byte, ok bool) {
	var dec decoder
	if len(b) > 0 && b[0] == eventPacked {
		// Only the payload: the version byte and what follows the topic.
		tail, err := unpackTail(b, (*buf)[:0])
		if err != nil || len(tail) < 1 || tail[0] != eventVersion1 && tail[0] != eventVersion && tail[0] != eventVersion3 {
			return nil, false
		}
		*buf, dec = tail, decoder{b: tail[1:]}
	} else {
		if len(b) < 9 || b[0] != eventVersion1 && b[0] != eventVersion && b[0] != eventVersion3 {
			return nil, false
		}
		dec = decoder{b: b[9:]}
		dec.bytes() // source
		dec.bytes() // id
		dec.bytes() // topic
	}
	n := dec.uvarint()
	for i := uint64(0); i < n && dec.err == nil; i++ {
		dec.bytes()
		dec.bytes()
	}
	body = dec.bytes()
	return body, dec.err == nil
}

// bodyHas reports whether the encoded event v's body contains s's text;
// buf is eventBody's.
func bodyHas(v []byte, s app.Search, buf *[]byte) bool {
	body, ok := eventBody(v, buf)
	return ok && s.In(body)
}
