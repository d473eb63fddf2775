package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

var (
	_ app.ControlStore = (*DB)(nil)
	_ app.RateStore    = (*DB)(nil)
)

// PauseDestination pauses dest, durably; a paused one keeps its first pause.
func (d *DB) PauseDestination(ctx context.Context, dest string, at time.Time, by, reason string) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	_, err := d.pool.Exec(ctx, `INSERT INTO hookbox_destinations AS c (name, paused, paused_at, paused_by, reason)
VALUES ($1, true, $2, $3, $4)
ON CONFLICT (name) DO UPDATE SET paused = true, paused_at = EXCLUDED.paused_at, paused_by = EXCLUDED.paused_by, reason = EXCLUDED.reason
	WHERE NOT c.paused`, dest, at.UTC(), by, reason)
	return d.committed(err)
}

// ResumeDestination ends dest's pause, durably.
func (d *DB) ResumeDestination(ctx context.Context, dest string) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	_, err := d.pool.Exec(ctx, `UPDATE hookbox_destinations SET paused = false, paused_at = NULL, paused_by = '', reason = ''
WHERE name = $1`, dest)
	return d.committed(err)
}

// HoldDestination holds dest until until on every node, unless held
// longer already.
func (d *DB) HoldDestination(ctx context.Context, dest string, until time.Time) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	_, err := d.pool.Exec(ctx, `INSERT INTO hookbox_destinations AS c (name, held_until) VALUES ($1, $2)
ON CONFLICT (name) DO UPDATE SET held_until = greatest(c.held_until, EXCLUDED.held_until)`, dest, until.UTC())
	return d.committed(err)
}

// DestinationControls returns every destination's stored controls.
func (d *DB) DestinationControls(ctx context.Context) (map[string]app.DestinationControl, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	rows, err := d.pool.Query(ctx, `SELECT name, paused, paused_at, paused_by, reason, held_until,
	failing_since, last_error, next_try, recovered_at, alerted FROM hookbox_destinations`)
	if err != nil {
		return nil, err
	}
	out := map[string]app.DestinationControl{}
	var (
		name                      string
		c                         app.DestinationControl
		pausedAt, hld             *time.Time
		since, next, rec, alerted *time.Time
	)
	_, err = pgx.ForEachRow(rows, []any{&name, &c.Paused, &pausedAt, &c.PausedBy, &c.Reason, &hld,
		&since, &c.Health.LastError, &next, &rec, &alerted}, func() error {
		c.PausedAt, c.HeldUntil = time.Time{}, time.Time{}
		c.Health.FailingSince, c.Health.NextTry, c.Health.RecoveredAt, c.Health.Alerted = deref(since), deref(next), deref(rec), deref(alerted)
		if pausedAt != nil {
			c.PausedAt = pausedAt.UTC()
		}
		if hld != nil {
			c.HeldUntil = hld.UTC()
		}
		out[name] = c
		return nil
	})
	return out, err
}

// ReserveStarts reserves n starts to dest spaced by spacing, for the whole
// cluster: one statement moves the destination's next free start on by
// n*spacing from the later of it and one spacing before now (the
// database's clock, which every node shares), and returns where the
// reserved slots begin. The spacing of slack absorbs the time a node takes
// from its slot to its reservation, which would otherwise be added to
// every spacing; it allows one start early after an idle spell, no more. Two nodes that
// reserve at once are serialised by the row's lock, so together they
// never start more than the rate allows.
func (d *DB) ReserveStarts(ctx context.Context, dest string, n int, spacing time.Duration) (first time.Time, now time.Time, err error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	err = d.pool.QueryRow(ctx, `WITH k AS (SELECT make_interval(secs => $3::float8 / 1e6) AS one,
	make_interval(secs => $2::float8 * $3::float8 / 1e6) AS span)
INSERT INTO hookbox_destinations AS c (name, next_start) SELECT $1, clock_timestamp() + k.span FROM k
ON CONFLICT (name) DO UPDATE SET next_start = greatest(c.next_start, clock_timestamp() - (SELECT one FROM k)) + (SELECT span FROM k)
RETURNING next_start - (SELECT span FROM k), clock_timestamp()`,
		dest, n, spacing.Microseconds()).Scan(&first, &now)
	return first, now, d.committed(err)
}
