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
// search budget of events (200,000 or 1 s by default); a page cut short by
// it says so in SearchedUntil, and Next goes on from there. Each body is
// compared where it lies in the transaction's pages: nothing is copied or
// allocated per event, and only matches are decoded.
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
	err := d.view(ctx, func(tx *bolt.Tx) error {
		res = app.EventSearch{}
		events := tx.Bucket(bucketEvents)
		if q.ID != "" {
			var rows []app.EventSummary
			if err := d.findByID(tx, q, &rows); err != nil {
				return err
			}
			for _, r := range rows {
				res.Searched++
				if body, ok := eventBody(events.Get(seqKey(r.Seq))); ok && search.In(body) {
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
		for ; k != nil; k, v = c.Prev() {
			if len(res.Rows) == q.Limit {
				res.Next = binary.BigEndian.Uint64(k) + 1
				return nil
			}
			if res.Searched == budget.Events || res.Searched%256 == 255 && time.Now().After(deadline) {
				res.Next, res.SearchedUntil = binary.BigEndian.Uint64(k)+1, oldest
				return nil
			}
			if res.Searched%1024 == 1023 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			res.Searched++
			at, err := receivedAt(v)
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
			if body, ok := eventBody(v); !ok || !search.In(body) {
				continue
			}
			row, ok, err := summarize(tx, k, v, q)
			if err != nil {
				return err
			}
			if ok {
				res.Rows = append(res.Rows, row)
			}
		}
		return nil
	})
	return res, err
}

// eventBody finds the body in an encoded event (see encodeEvent) without
// copying it: the bytes are the transaction's, valid until it ends. ok is
// false when the record cannot be read.
func eventBody(b []byte) (body []byte, ok bool) {
	if len(b) < 9 || b[0] != eventVersion1 && b[0] != eventVersion {
		return nil, false
	}
	dec := decoder{b: b[9:]}
	dec.bytes() // source
	dec.bytes() // id
	dec.bytes() // topic
	n := dec.uvarint()
	for i := uint64(0); i < n && dec.err == nil; i++ {
		dec.bytes()
		dec.bytes()
	}
	body = dec.bytes()
	return body, dec.err == nil
}

// bodyHas reports whether the encoded event v's body contains s's text.
func bodyHas(v []byte, s app.Search) bool {
	body, ok := eventBody(v)
	return ok && s.In(body)
}
