// The attempts: a finished send recorded, its delivery moved on (to
// delivered, to the next step of its schedule, or dead), and replays.

package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

// recordSQL stores a round of attempts (one per delivery) and moves each
// delivery on (to the next step of its schedule unless the attempt was
// early), ending this node's lease, and adds the count changes the domain
// gave for each attempt ($13 on, deltaArgs tagged with the delivery id;
// ownName is the delivery's destination), of the deliveries that exist
// only; it returns (id, attempt number) per delivery that exists.
var recordSQL = `
WITH r AS (
	SELECT * FROM unnest($1::bigint[], $2::smallint[], $3::timestamptz[], $4::timestamptz[], $5::bigint[], $6::int[], $7::text[], $8::bytea[], $9::bool[], $10::bool[])
		AS r(id, state, due, started, duration_ns, status, error, response, early, probe)
), u AS (
	UPDATE hookbox_deliveries d SET attempts = d.attempts + 1, tries = d.tries + CASE WHEN r.early THEN 0 ELSE 1 END, state = r.state, due = r.due,
		run_at = CASE WHEN r.state = 1 THEN r.due END, leased_by = NULL,
		updated = r.started + r.duration_ns / 1000 * interval '1 microsecond', last_status = r.status, last_error = r.error
	FROM r WHERE d.id = r.id
	RETURNING d.id, d.attempts, d.destination
), a AS (
	INSERT INTO hookbox_attempts (delivery_id, n, started, duration_ns, status, error, response, probe)
	SELECT r.id, u.attempts, r.started, r.duration_ns, r.status, r.error, r.response, r.probe FROM r JOIN u USING (id)
), ` + deltaCTEs(`SELECT id AS i, destination AS name FROM u`, "$11", "$12", 13) + `
SELECT id, attempts FROM u`

// RecordAttempts stores each record's attempt and moves its delivery on,
// in one transaction: the dispatcher hands over what its senders finished
// while the last write committed. A record whose delivery is gone fails
// alone (app.ErrNotFound); a failed commit fails them all.
func (d *DB) RecordAttempts(ctx context.Context, recs []app.AttemptRecord) []error {
	errs := make([]error, len(recs))
	if err := d.begin(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	defer d.inflight.Done()
	ctx, cancel := opCtx(ctx)
	defer cancel()
	shard := d.takeShard()
	defer d.giveShard(shard)
	// A delivery recorded twice in one batch takes two rounds.
	var rounds [][]int
	seen := map[uint64]int{}
	for i, r := range recs {
		n := seen[r.ID]
		seen[r.ID] = n + 1
		if n == len(rounds) {
			rounds = append(rounds, nil)
		}
		rounds[n] = append(rounds[n], i)
	}
	var delta app.CountDelta
	run := func(q querier) error {
		for _, round := range rounds {
			var (
				ids, durs    []int64
				states       []int16
				dues, starts []time.Time
				statuses     []int32
				texts        []string
				responses    [][]byte
				early, probe []bool
				byID         = map[int64]int{}
				counts       deltaArgs
			)
			for _, i := range round {
				r := recs[i]
				a := r.Attempt
				ids = append(ids, int64(r.ID))
				states = append(states, int16(r.State))
				dues = append(dues, r.Due)
				starts = append(starts, a.Start)
				durs = append(durs, int64(a.Duration))
				statuses = append(statuses, int32(a.Status))
				texts = append(texts, pgText(a.Error))
				responses = append(responses, nonNil(a.Response))
				early = append(early, r.Early)
				probe = append(probe, a.Probe)
				byID[int64(r.ID)] = i
				delta.Reset()
				countAttempt(&delta, ownName, a, r.State, a.Start.Add(a.Duration))
				counts.add(int64(r.ID), &delta)
				errs[i] = fmt.Errorf("delivery %d: %w", r.ID, app.ErrNotFound)
			}
			args := append([]any{ids, states, dues, starts, durs, statuses, texts, responses, early, probe, d.node, shard}, counts.args()...)
			rows, err := q.Query(ctx, recordSQL, args...)
			if err != nil {
				return err
			}
			var id int64
			var n int
			if _, err := pgx.ForEachRow(rows, []any{&id, &n}, func() error {
				i := byID[id]
				errs[i] = nil
				recs[i].Attempt.N = n
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	}
	var err error
	if len(rounds) == 1 { // one statement is its own transaction: one round trip
		err = run(d.pool)
	} else {
		err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return run(tx) })
	}
	if d.committed(err) != nil {
		for i := range errs {
			errs[i] = fmt.Errorf("record attempts: %w", err)
		}
	}
	return errs
}

// Replay makes delivery id pending again, due at now, keeping its history.
// It works on dead and on delivered deliveries; a pending one is left as is.
func (d *DB) Replay(ctx context.Context, id uint64, now time.Time) error {
	n, err := d.replay(ctx, `AND id = $4 AND state <> 1`, now, int64(id))
	if err != nil {
		return fmt.Errorf("replay %d: %w", id, err)
	}
	if n > 0 {
		return nil
	}
	// Pending already, or gone (perhaps swept while this waited for its
	// event): asked in a statement of its own, which sees the sweep's commit.
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var one int
	return appErr(d.pool.QueryRow(ctx, "SELECT 1 FROM hookbox_deliveries WHERE id = $1", int64(id)).Scan(&one))
}

// ReplayDead makes every dead delivery pending again, due at now, and
// reports how many.
func (d *DB) ReplayDead(ctx context.Context, now time.Time) (int, error) {
	n, err := d.replay(ctx, `AND state = 3`, now)
	if err != nil {
		return 0, fmt.Errorf("replay dead deliveries: %w", err)
	}
	return n, nil
}

// replay makes the deliveries that cond selects pending again, due at now
// ($1), tells the other nodes, and reports how many. cond may use $4
// onwards (args). It replays only a delivery whose event it can lock (FOR
// KEY SHARE) against the sweep (see DeleteEventsBefore).
func (d *DB) replay(ctx context.Context, cond string, now time.Time, args ...any) (int, error) {
	if err := d.begin(); err != nil {
		return 0, err
	}
	defer d.inflight.Done()
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var n, notified int
	err := d.pool.QueryRow(ctx, `WITH u AS (
	UPDATE hookbox_deliveries d SET state = 1, due = $1, run_at = $1, updated = $1, tries = 0, leased_by = NULL
	WHERE EXISTS (SELECT 1 FROM hookbox_events e WHERE e.seq = d.event_seq FOR KEY SHARE) `+cond+` RETURNING id
), n AS (
	SELECT pg_notify($2, $3) FROM (SELECT 1 FROM u LIMIT 1) o
) SELECT (SELECT count(*) FROM u), (SELECT count(*) FROM n)`,
		append([]any{now, d.channel, d.node}, args...)...).Scan(&n, &notified)
	return n, d.committed(err)
}
