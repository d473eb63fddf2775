// Replay by query: the finished deliveries a query selects, found in one
// statement and made pending again by one UPDATE per batch.

package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

// ReplayQuery finds the dead or delivered deliveries q selects, the first
// q.Limit by id (accept order), and unless q.DryRun makes them pending
// again, all due at now, app.ReplayBatch per statement: each batch is its
// own short transaction (a 100,000-row UPDATE would hold its row locks and
// the dispatchers' leases back for seconds) and tells the other nodes.
// A delivery that left the state it was matched in before its batch runs
// is left alone and not counted.
func (d *DB) ReplayQuery(ctx context.Context, q app.ReplayQuery, now time.Time) (app.ReplayResult, error) {
	q, err := q.Check()
	if err != nil {
		return app.ReplayResult{}, err
	}
	states := wantedStates(q)
	items, err := d.matchReplay(ctx, q, states)
	if err != nil {
		return app.ReplayResult{}, fmt.Errorf("replay by query: %w", err)
	}
	res := app.ReplayResult{}
	if len(items) > q.Limit {
		items, res.More = items[:q.Limit], true
	}
	res.Matched, res.First = len(items), items[:min(len(items), app.ReplayFirstShown)]
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
		ids := make([]int64, len(batch))
		for i, it := range batch {
			ids[i] = int64(it.Delivery)
		}
		n, err := d.replay(ctx, `AND id = ANY($4) AND state = ANY($5)`, now, ids, states)
		if err != nil {
			return res, fmt.Errorf("replay by query: %w", err)
		}
		res.Replayed += n
	}
	return res, nil
}

// wantedStates are the delivery states q replays, as stored.
func wantedStates(q app.ReplayQuery) []int16 {
	var s []int16
	for _, st := range []app.DeliveryState{app.Delivered, app.Dead} {
		if q.Wants(st) {
			s = append(s, int16(st))
		}
	}
	return s
}

// matchReplay returns up to q.Limit+1 of the deliveries q selects, in id
// order, with their events' names.
func (d *DB) matchReplay(ctx context.Context, q app.ReplayQuery, states []int16) ([]app.ReplayItem, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	args := []any{states}
	conds := []string{"d.state = ANY($1)"}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "$$", "$"+strconv.Itoa(len(args))))
	}
	if q.Delivery != 0 {
		add("d.id = $$", int64(q.Delivery))
	}
	if q.Destination != "" {
		add("d.destination = $$", q.Destination)
	}
	if q.Source != "" {
		add("e.source = $$", q.Source)
	}
	if q.Topic != "" {
		add("e.topic LIKE $$::bytea", []byte(globToLike(q.Topic)))
	}
	if !q.Since.IsZero() {
		add("e.received_at >= $$", q.Since)
	}
	if !q.Until.IsZero() {
		add("e.received_at <= $$", q.Until)
	}
	if q.Q != "" {
		pattern, lower := searchArgs(q.Q)
		args = append(args, pattern, lower)
		conds = append(conds, searchSQL("e", len(args)-1, len(args)))
	}
	args = append(args, q.Limit+1)
	rows, err := d.pool.Query(ctx, `SELECT d.id, d.destination, d.state, d.event_seq, e.source, e.id, e.topic
	FROM hookbox_deliveries d JOIN hookbox_events e ON e.seq = d.event_seq
	WHERE `+strings.Join(conds, " AND ")+` ORDER BY d.id LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (app.ReplayItem, error) {
		var it app.ReplayItem
		var id, seq int64
		var state int16
		var eid, topic []byte
		err := r.Scan(&id, &it.Destination, &state, &seq, &it.Event.Source, &eid, &topic)
		it.Delivery, it.State, it.EventSeq = uint64(id), app.DeliveryState(state), uint64(seq)
		it.Event.ID, it.Event.Topic = string(eid), string(topic)
		return it, err
	})
}

// EventNames returns the source, id and topic of each event of seqs that
// is stored.
func (d *DB) EventNames(ctx context.Context, seqs []uint64) (map[uint64]app.EventName, error) {
	out := make(map[uint64]app.EventName, len(seqs))
	if len(seqs) == 0 {
		return out, nil
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	ids := make([]int64, len(seqs))
	for i, s := range seqs {
		ids[i] = int64(s)
	}
	rows, err := d.pool.Query(ctx, "SELECT seq, source, id, topic FROM hookbox_events WHERE seq = ANY($1)", ids)
	if err != nil {
		return nil, fmt.Errorf("event names: %w", err)
	}
	var seq int64
	var n app.EventName
	var id, topic []byte
	if _, err := pgx.ForEachRow(rows, []any{&seq, &n.Source, &id, &topic}, func() error {
		out[uint64(seq)] = app.EventName{Source: n.Source, ID: string(id), Topic: string(topic)}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("event names: %w", err)
	}
	return out, nil
}
