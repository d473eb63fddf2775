package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"hookbox/app"
)

// firePendingChunk bounds one FirePending statement.
const firePendingChunk = 1000

// applyDebounce carries out one debounced route for event seq at now: it
// loads the key's row, asks the domain (app.DecideDebounce) and saves what
// it says. The key's row is locked (FOR UPDATE) until tx ends, so
// concurrent accepts of one key, on any node, take turns.
func applyDebounce(ctx context.Context, tx pgx.Tx, op *app.DebounceOp, seq uint64, now time.Time) error {
	key := []byte(op.Key)
	// The order key of the event that opens the pending delivery: a merge
	// keeps it, so the fired deliveries keep that event's group.
	orderKey := pgText(op.OrderKey)
	for try := 0; try < 3; try++ {
		var due pgtype.Timestamptz
		var ev pgtype.Int8
		var merged []int64
		var times []time.Time
		err := tx.QueryRow(ctx, `SELECT due, event_seq, merged, window_times FROM hookbox_debounce WHERE route = $1 AND key = $2 FOR UPDATE`,
			op.Route, key).Scan(&due, &ev, &merged, &times)
		found := err == nil
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		dec := app.DecideDebounce(op, found && due.Valid, times, now)
		op.Result = dec.Result
		if dec.Result == app.Merged {
			_, err := tx.Exec(ctx, `UPDATE hookbox_debounce SET event_seq = $3, merged = $4 WHERE route = $1 AND key = $2`,
				op.Route, key, int64(seq), app.KeepMerged(merged, ev.Int64))
			return err
		}
		deferred := dec.Result == app.Deferred
		var freeAt pgtype.Timestamptz
		if dec.Limited {
			times = dec.Sends
			freeAt = pgtype.Timestamptz{Time: times[len(times)-1].Add(op.Window), Valid: true}
		}
		if found {
			if dec.Limited {
				_, err = tx.Exec(ctx, `UPDATE hookbox_debounce SET due = $3, event_seq = $4, deferred = $5, merged = '{}', dests = $6,
					window_ns = $7, window_times = $8, free_at = $9, order_key = $10 WHERE route = $1 AND key = $2`,
					op.Route, key, dec.Due, int64(seq), deferred, op.To, int64(op.Window), times, freeAt, orderKey)
			} else { // no rate limit: a window kept from an older config stays as it is
				_, err = tx.Exec(ctx, `UPDATE hookbox_debounce SET due = $3, event_seq = $4, deferred = false, merged = '{}', dests = $5,
					order_key = $6 WHERE route = $1 AND key = $2`, op.Route, key, dec.Due, int64(seq), op.To, orderKey)
			}
			return err
		}
		var window int64
		if dec.Limited {
			window = int64(op.Window)
		} else {
			times = []time.Time{}
		}
		tag, err := tx.Exec(ctx, `INSERT INTO hookbox_debounce (route, key, due, event_seq, deferred, dests, window_ns, window_times, free_at, order_key)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (route, key) DO NOTHING`,
			op.Route, key, dec.Due, int64(seq), deferred, op.To, window, times, freeAt, orderKey)
		if err != nil || tag.RowsAffected() == 1 {
			return err
		}
		// Another transaction made the key's row meanwhile: lock it and
		// decide again.
	}
	return fmt.Errorf("key %q: the row kept changing", op.Key)
}

// fireSQL turns up to $2 pending deliveries due by $1 into deliveries, in
// one statement: it records what each merged, opens the deliveries of
// those whose event is stored, dead-letters (due $5, the zero time) with
// the reason those whose event is gone (the sweep keeps the event of a
// pending delivery, so only a damaged database or an older build's sweep
// loses one: the loss is put where it is seen), frees their keys (a key
// without a rate-limit window goes; a deferred send takes its slot in the
// window), and notifies the other nodes. It returns (route, fired) per
// route, and ("", -1) when it notified. Rows another node is firing are
// skipped. It counts what fired as the domain says (app.CountDelta.Fired
// of one delivery of ownName, $7 on, added once per fired row with the
// row's route) in this node's shard $6.
var fireSQL = `
WITH f AS MATERIALIZED (
	SELECT route, key, event_seq, deferred, merged, dests, window_ns, order_key
	FROM hookbox_debounce WHERE due IS NOT NULL AND due <= $1
	ORDER BY due LIMIT $2 FOR UPDATE SKIP LOCKED
), m AS (
	INSERT INTO hookbox_merged (fired_seq, merged_seq)
	SELECT f.event_seq, x FROM f, unnest(f.merged) AS x ON CONFLICT DO NOTHING
), live AS MATERIALIZED (
	SELECT f.* FROM f WHERE EXISTS (SELECT 1 FROM hookbox_events e WHERE e.seq = f.event_seq FOR KEY SHARE)
), d AS (
	INSERT INTO hookbox_deliveries (event_seq, destination, state, due, run_at, created, updated, route, order_key)
	SELECT live.event_seq, x.dest, 1, $1, $1, $1, $1, live.route, live.order_key
	FROM live, unnest(live.dests) WITH ORDINALITY AS x(dest, ord)
	ORDER BY live.event_seq, x.ord
), lost AS (
	INSERT INTO hookbox_deliveries (event_seq, destination, state, due, run_at, created, updated, route, order_key, last_error)
	SELECT f.event_seq, x.dest, 3, $5, NULL, $1, $1, f.route, f.order_key,
		format('event %s was gone when its debounce window ended (route %s, key %s); nothing could be sent',
			f.event_seq, f.route, encode(f.key, 'escape'))
	FROM f, unnest(f.dests) WITH ORDINALITY AS x(dest, ord)
	WHERE NOT EXISTS (SELECT 1 FROM live WHERE live.route = f.route AND live.key = f.key)
	ORDER BY f.event_seq, x.ord
), gone AS (
	DELETE FROM hookbox_debounce k USING f WHERE k.route = f.route AND k.key = f.key AND f.window_ns = 0
), kept AS (
	UPDATE hookbox_debounce k SET due = NULL, event_seq = NULL, merged = '{}', deferred = false,
		window_times = CASE WHEN f.deferred THEN ARRAY(
			SELECT w.t FROM unnest(k.window_times) WITH ORDINALITY AS w(t, ord)
			WHERE w.t > $1::timestamptz - (f.window_ns / 1000) * interval '1 microsecond' ORDER BY w.ord) || $1::timestamptz
			ELSE k.window_times END,
		free_at = CASE WHEN f.deferred THEN $1::timestamptz + (f.window_ns / 1000) * interval '1 microsecond' ELSE k.free_at END
	FROM f WHERE k.route = f.route AND k.key = f.key AND f.window_ns > 0
), n AS (
	SELECT pg_notify($3, $4) FROM (SELECT 1 FROM live LIMIT 1) o
), ` + deltaCTEs(`SELECT 0::bigint AS i, route AS name FROM live`, "$4", "$6", 7) + `
SELECT route, count(*) FROM live GROUP BY route
UNION ALL SELECT '', -1 FROM n`

// FirePending turns the pending deliveries due by now into deliveries to
// their destinations (dead ones, with the reason, where the event is
// gone), records which events they merged, and frees their keys; several nodes may call it at once (each fires other rows). It
// reports how many fired per route and the due time of the next pending
// one (zero if none).
func (d *DB) FirePending(ctx context.Context, now time.Time) (map[string]int, time.Time, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	// Look first: the dispatcher asks on every pass, and most find nothing due.
	next, err := d.nextPending(ctx)
	if err != nil || next.IsZero() || next.After(now) {
		return nil, next, err
	}
	fired := map[string]int{}
	shard := d.takeShard()
	defer d.giveShard(shard)
	// The rule is asked of one fired row of a route the statement names
	// (ownName); the statement adds it once per row it fires.
	var delta app.CountDelta
	delta.Fired(now, map[string]int{ownName: 1})
	var counts deltaArgs
	counts.add(0, &delta)
	args := append([]any{now, firePendingChunk, d.channel, d.node, time.Time{}, shard}, counts.args()...)
	rows, err := d.pool.Query(ctx, fireSQL, args...)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("fire pending deliveries: %w", d.committed(err))
	}
	var route string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&route, &n}, func() error {
		if n > 0 {
			fired[route] = n
		}
		return nil
	}); d.committed(err) != nil {
		return nil, time.Time{}, fmt.Errorf("fire pending deliveries: %w", err)
	}
	next, err = d.nextPending(ctx)
	return fired, next, err
}

// nextPending returns the due time of the earliest pending delivery.
func (d *DB) nextPending(ctx context.Context) (time.Time, error) {
	var next pgtype.Timestamptz
	err := d.pool.QueryRow(ctx, "SELECT min(due) FROM hookbox_debounce WHERE due IS NOT NULL").Scan(&next)
	return next.Time, err
}

// PruneWindows deletes at most limit rate-limit windows whose every send
// left the window by now and whose key waits for nothing, and reports how
// many.
func (d *DB) PruneWindows(ctx context.Context, now time.Time, limit int) (int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	tag, err := d.pool.Exec(ctx, `DELETE FROM hookbox_debounce WHERE ctid = ANY(ARRAY(
	SELECT ctid FROM hookbox_debounce WHERE due IS NULL AND free_at <= $1 ORDER BY free_at LIMIT $2 FOR UPDATE SKIP LOCKED))`, now, limit)
	if d.committed(err) != nil {
		return 0, fmt.Errorf("prune rate-limit windows: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// MergedInto returns the seqs of the events merged into event seq's
// delivery by debouncing.
func (d *DB) MergedInto(ctx context.Context, seq uint64) ([]uint64, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	rows, err := d.pool.Query(ctx, "SELECT merged_seq FROM hookbox_merged WHERE fired_seq = $1 ORDER BY merged_seq", int64(seq))
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (uint64, error) {
		var s int64
		err := r.Scan(&s)
		return uint64(s), err
	})
}

// CarriedBy returns the event whose delivery carries merged event seq:
// the one that went out (hookbox_merged), else the latest event of the
// open window that holds it; 0 for none.
func (d *DB) CarriedBy(ctx context.Context, seq uint64) (uint64, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var carrier int64
	err := d.pool.QueryRow(ctx, `SELECT COALESCE(
		(SELECT fired_seq FROM hookbox_merged WHERE merged_seq = $1 ORDER BY fired_seq DESC LIMIT 1),
		(SELECT event_seq FROM hookbox_debounce WHERE due IS NOT NULL AND $1 = ANY(merged) LIMIT 1), 0)`, int64(seq)).Scan(&carrier)
	if err != nil {
		return 0, fmt.Errorf("carried by: %w", err)
	}
	return uint64(carrier), nil
}

// PendingCount returns the number of pending (debounced) deliveries.
func (d *DB) PendingCount(ctx context.Context) (int, error) {
	return d.count(ctx, "SELECT count(*) FROM hookbox_debounce WHERE due IS NOT NULL")
}

// count runs a query that returns one count.
func (d *DB) count(ctx context.Context, sql string, args ...any) (int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var n int
	err := d.pool.QueryRow(ctx, sql, args...).Scan(&n)
	return n, err
}
