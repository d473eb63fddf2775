// Retry now: waiting deliveries made due at once (issue 28), and the other
// nodes told, as an accept tells them of new work (pg_notify on the
// schema's channel, which each node LISTENs to: see listen).

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

// RetryNow makes the waiting deliveries ids due at now, keeping their
// attempts and tries, and reports how many it moved: see
// app.ReplayStore.RetryNow. A delivery a node holds (leased_by set: in
// flight, perhaps taken early, so due later) is left as is: its run_at is
// the end of that node's lease, and moving it would let another node take
// it while it is being sent. The rows are locked (FOR UPDATE) from the
// check to the change, so a claim or a record cannot come in between.
func (d *DB) RetryNow(ctx context.Context, ids []uint64, now time.Time) (int, error) {
	if err := d.begin(); err != nil {
		return 0, err
	}
	defer d.inflight.Done()
	ctx, cancel := opCtx(ctx)
	defer cancel()
	want := make([]int64, len(ids))
	for i, id := range ids {
		want[i] = int64(id)
	}
	var n int
	var refused error
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		n, refused = 0, nil
		// Locked in id order, so two calls over the same ids cannot deadlock.
		rows, err := tx.Query(ctx, "SELECT "+deliveryCols+", d.leased_by IS NOT NULL FROM hookbox_deliveries d WHERE d.id = ANY($1) ORDER BY d.id FOR UPDATE", want)
		if err != nil {
			return err
		}
		found := map[uint64]bool{}
		var move []int64
		for rows.Next() {
			dl := &app.Delivery{}
			var id, seq int64
			var state int16
			var leased bool
			if err := rows.Scan(append(deliveryDest(dl, &id, &seq, &state), &leased)...); err != nil {
				rows.Close()
				return err
			}
			dl.ID, dl.EventSeq, dl.State = uint64(id), uint64(seq), app.DeliveryState(state)
			found[dl.ID] = true
			due, err := app.RetryNowVerdict(dl, now)
			if err != nil && refused == nil {
				refused = err
			}
			if due && !leased {
				move = append(move, id)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, id := range ids {
			if !found[id] {
				refused = app.RetryNowNotFound(id)
				break
			}
		}
		if refused != nil || len(move) == 0 {
			return nil // nothing changed: the commit only ends the transaction
		}
		tag, err := tx.Exec(ctx, "UPDATE hookbox_deliveries SET due = $2, run_at = $2 WHERE id = ANY($1)", move, now)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", d.channel, d.node)
		return err
	})
	if err := d.committed(err); err != nil {
		return 0, fmt.Errorf("retry deliveries now: %w", err)
	}
	if refused != nil {
		return 0, refused
	}
	return n, nil
}

// retryDestinationSQL makes the waiting deliveries to $1 that no node
// holds due at $2 (their run_at is their due time, so the outbox index
// finds them) and tells the other nodes ($3, $4) when it moved any.
const retryDestinationSQL = `WITH u AS (
	UPDATE hookbox_deliveries SET due = $2, run_at = $2
	WHERE destination = $1 AND state = 1 AND run_at > $2 AND due > $2 AND leased_by IS NULL RETURNING id
), n AS (
	SELECT pg_notify($3, $4) FROM (SELECT 1 FROM u LIMIT 1) o
) SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM n)`

// RetryDestination makes every waiting delivery to dest due at now, as
// RetryNow does (those a node holds are left as they are), in one
// statement, and reports how many it moved.
func (d *DB) RetryDestination(ctx context.Context, dest string, now time.Time) (int, error) {
	if err := d.begin(); err != nil {
		return 0, err
	}
	defer d.inflight.Done()
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var n, notified int
	err := d.pool.QueryRow(ctx, retryDestinationSQL, dest, now, d.channel, d.node).Scan(&n, &notified)
	if err := d.committed(err); err != nil {
		return 0, fmt.Errorf("retry the deliveries to %s now: %w", dest, err)
	}
	return n, nil
}
