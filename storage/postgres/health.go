package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

var _ app.HealthStore = (*DB)(nil)

// SaveDestinationHealth merges view into dest's stored health
// (app.MergeHealth): the row is locked while the merge is made, so that
// two nodes' views merge one after the other.
func (d *DB) SaveDestinationHealth(ctx context.Context, dest string, view app.DestinationHealth) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	view = app.DestinationHealth{FailingSince: micro(view.FailingSince), LastError: view.LastError,
		NextTry: micro(view.NextTry), RecoveredAt: micro(view.RecoveredAt)}
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO hookbox_destinations (name) VALUES ($1) ON CONFLICT (name) DO NOTHING`, dest); err != nil {
			return err
		}
		var old app.DestinationHealth
		var since, next, rec, alerted *time.Time
		if err := tx.QueryRow(ctx, `SELECT failing_since, last_error, next_try, recovered_at, alerted FROM hookbox_destinations
WHERE name = $1 FOR UPDATE`, dest).Scan(&since, &old.LastError, &next, &rec, &alerted); err != nil {
			return err
		}
		old.FailingSince, old.NextTry, old.RecoveredAt, old.Alerted = deref(since), deref(next), deref(rec), deref(alerted)
		h := app.MergeHealth(old, view)
		_, err := tx.Exec(ctx, `UPDATE hookbox_destinations SET failing_since = $2, last_error = $3, next_try = $4, recovered_at = $5
WHERE name = $1`, dest, orNull(h.FailingSince), h.LastError, orNull(h.NextTry), orNull(h.RecoveredAt))
		return err
	})
	return d.committed(err)
}

// MarkDestinationAlerted sets dest's alerted to to when it is from: one
// conditional update, which one node of several wins.
func (d *DB) MarkDestinationAlerted(ctx context.Context, dest string, from, to time.Time) (bool, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	tag, err := d.pool.Exec(ctx, `UPDATE hookbox_destinations SET alerted = $3 WHERE name = $1 AND alerted IS NOT DISTINCT FROM $2`,
		dest, orNull(from), orNull(to))
	if err = d.committed(err); err != nil {
		return false, err
	}
	return tag.RowsAffected() == 1, nil
}

// DestinationHealths returns every destination's stored health that has
// any, by name.
func (d *DB) DestinationHealths(ctx context.Context) (map[string]app.DestinationHealth, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	rows, err := d.pool.Query(ctx, `SELECT name, failing_since, last_error, next_try, recovered_at, alerted FROM hookbox_destinations
WHERE failing_since IS NOT NULL OR recovered_at IS NOT NULL OR alerted IS NOT NULL OR last_error <> ''`)
	if err != nil {
		return nil, err
	}
	out := map[string]app.DestinationHealth{}
	var (
		name                      string
		h                         app.DestinationHealth
		since, next, rec, alerted *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &since, &h.LastError, &next, &rec, &alerted}, func() error {
		h.FailingSince, h.NextTry, h.RecoveredAt, h.Alerted = deref(since), deref(next), deref(rec), deref(alerted)
		out[name] = h
		return nil
	})
	return out, err
}

// micro is t as the database keeps it: to the microsecond, in UTC.
func micro(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(time.Microsecond)
}

// deref is the time t points to, in UTC, or zero for NULL.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}

// orNull is t, or NULL for a zero time.
func orNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
