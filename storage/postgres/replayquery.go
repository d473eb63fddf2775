// Replay by query: the finished deliveries a query selects, found in one
// statement, and the UPDATE that makes the ones the replay selected
// pending again (app/replay runs it per batch).

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

// ReplayCandidates finds the dead or delivered deliveries q selects, the
// first q.Limit by id (accept order), in one statement; the replay's
// selection and its writes are the caller's (app.SelectReplay, Requeue).
func (d *DB) ReplayCandidates(ctx context.Context, q app.ReplayQuery) ([]app.ReplayItem, bool, error) {
	q, err := q.Check()
	if err != nil {
		return nil, false, err
	}
	items, err := d.matchReplay(ctx, q, states(app.ReplayFrom(q, true)))
	if err != nil {
		return nil, false, fmt.Errorf("replay by query: %w", err)
	}
	if len(items) > q.Limit {
		return items[:q.Limit], true, nil
	}
	return items, false, nil
}

// Requeue makes each delivery of ids still in one of the states from
// pending again, due at now, in one statement, its own short transaction
// (the caller bounds ids: a 100,000-row UPDATE would hold its row locks
// and the dispatchers' leases back for seconds), and tells the other
// nodes. One that left those states is left alone and not counted.
func (d *DB) Requeue(ctx context.Context, ids []uint64, from []app.DeliveryState, now time.Time) (int, error) {
	if len(ids) == 0 || len(from) == 0 {
		return 0, nil
	}
	rows := make([]int64, len(ids))
	for i, id := range ids {
		rows[i] = int64(id)
	}
	n, err := d.replay(ctx, `AND id = ANY($4) AND state = ANY($5)`, now, rows, states(from))
	if err != nil {
		return 0, fmt.Errorf("requeue: %w", err)
	}
	return n, nil
}

// states are delivery states as stored.
func states(from []app.DeliveryState) []int16 {
	s := make([]int16, len(from))
	for i, st := range from {
		s[i] = int16(st)
	}
	return s
}

// ReplayPending counts the pending deliveries a replay by q leaves alone
// (app.ReplayQuery.Leaves), with the filters ReplayCandidates uses.
func (d *DB) ReplayPending(ctx context.Context, q app.ReplayQuery) (int, error) {
	q, err := q.Check()
	if err != nil || q.Status != app.ReplayAny {
		return 0, err
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	where, args := replayWhere(q, states([]app.DeliveryState{app.Pending}))
	var n int64
	if err := d.pool.QueryRow(ctx, `SELECT count(*)
	FROM hookbox_deliveries d JOIN hookbox_events e ON e.seq = d.event_seq
	WHERE `+where, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("replay by query, pending: %w", err)
	}
	return int(n), nil
}

// replayWhere is the WHERE clause (and its arguments) of the deliveries
// in states that q's filters select, over hookbox_deliveries d joined to
// hookbox_events e.
func replayWhere(q app.ReplayQuery, states []int16) (string, []any) {
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
	return strings.Join(conds, " AND "), args
}

// matchReplay returns up to q.Limit+1 of the deliveries q selects, in id
// order, with their events' names.
func (d *DB) matchReplay(ctx context.Context, q app.ReplayQuery, states []int16) ([]app.ReplayItem, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	where, args := replayWhere(q, states)
	args = append(args, q.Limit+1)
	rows, err := d.pool.Query(ctx, `SELECT d.id, d.destination, d.state, d.event_seq, e.source, e.id, e.topic
	FROM hookbox_deliveries d JOIN hookbox_events e ON e.seq = d.event_seq
	WHERE `+where+` ORDER BY d.id LIMIT $`+strconv.Itoa(len(args)), args...)
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
