package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"hookbox/app"
)

// maxGroup is the default of Options.MaxGroup.
const maxGroup = 1024

// acceptWrite is an Accept waiting for a committer, and its results.
type acceptWrite struct {
	e    *app.Event
	exp  time.Time
	plan *app.Plan
	// Set by the commit (reset before each try).
	dup  bool
	seq  uint64
	done chan error
}

// Accept checks and records e's id, stores e, opens one delivery per
// direct destination of plan and applies its debounced routes, all in one
// transaction, group-committed with concurrent calls. The id is checked by
// the primary key of hookbox_event_ids (INSERT … ON CONFLICT), so two
// nodes that receive the same id at the same moment cannot both accept it:
// the second waits for the first's commit and finds the id taken. Accept
// returns only after the commit has returned, flushed (synchronous_commit).
func (d *DB) Accept(ctx context.Context, e *app.Event, idExpires time.Time, plan *app.Plan) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := d.begin(); err != nil {
		return false, err
	}
	defer d.inflight.Done()
	w := &acceptWrite{e: e, exp: idExpires, plan: plan, done: make(chan error, 1)}
	// ctx is honoured until the write is handed to a committer, never after.
	select {
	case d.queue <- w:
	case <-ctx.Done():
		return false, ctx.Err()
	}
	// The commit is not abandoned for a caller that leaves: its outcome
	// must be known before anyone answers.
	if err := <-w.done; err != nil {
		return false, fmt.Errorf("accept %s/%s: %w", e.Source, e.ID, err)
	}
	if !w.dup {
		e.Seq = w.seq
	}
	return w.dup, nil
}

// committer is one of the group committers: it takes whatever accepts are
// queued (at least one, at most Options.MaxGroup) and commits them in one
// transaction. With several committers, one group gathers and runs its
// statement while another waits for its commit's flush; PostgreSQL flushes
// the WAL of concurrent commits together.
func (d *DB) committer() {
	defer d.done.Done()
	group := make([]*acceptWrite, 0, d.opt.MaxGroup)
	for {
		select {
		case w := <-d.queue:
			group = append(group[:0], w)
		case <-d.stop:
			return
		}
	more:
		for len(group) < d.opt.MaxGroup {
			select {
			case w := <-d.queue:
				group = append(group, w)
			default:
				break more
			}
		}
		d.commitGroup(group)
	}
}

// commitGroup commits group and answers each write. A deadlock or
// serialization failure is tried again; any other failure of a group of
// several is tried write by write, so that one bad write (a key too large
// to index) never fails its neighbours.
func (d *DB) commitGroup(group []*acceptWrite) {
	// A group's commit is no caller's: it runs to its end for all of them.
	ctx, cancel := opCtx(context.Background())
	defer cancel()
	err := d.committed(d.acceptRetrying(ctx, group))
	if err != nil && len(group) > 1 {
		for _, w := range group {
			w.done <- d.committed(d.acceptRetrying(ctx, []*acceptWrite{w}))
		}
		return
	}
	for _, w := range group {
		w.done <- err
	}
}

func (d *DB) acceptRetrying(ctx context.Context, group []*acceptWrite) error {
	var err error
	for try := 0; try < 5; try++ {
		if err = d.acceptGroup(ctx, group); err == nil || !transient(err) {
			return err
		}
	}
	return err
}

// transient reports whether err is a deadlock or serialization failure,
// which the same transaction may not meet again.
func transient(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// acceptSQL is the whole accept of a group in one statement: the ids
// (ordered, so that two groups lock them in the same order), the events of
// the ids that were new or expired, their deliveries, and the NOTIFY that
// tells the other nodes, delivered at commit, and the count changes the
// domain gave for each write ($20 on, deltaArgs tagged with i), of the
// accepted writes only (in the committer's own shard). It returns (i, seq)
// per accepted write, and (-1, 0) when it notified.
var acceptSQL = `
WITH input AS (
	SELECT * FROM unnest($1::int[], $2::text[], $3::bytea[], $4::timestamptz[], $5::timestamptz[], $6::bytea[], $7::bytea[], $8::bytea[], $9::bool[], $15::text[], $18::text[], $19::timestamptz[])
		AS t(i, source, id, received, expires, topic, headers, body, opens, unrouted, origin, provider_at)
), ids AS (
	INSERT INTO hookbox_event_ids AS x (source, id, received, expires, seq)
	SELECT source, id, received, expires, nextval('hookbox_event_seq') FROM input ORDER BY source, id
	ON CONFLICT (source, id) DO UPDATE SET received = EXCLUDED.received, expires = EXCLUDED.expires, seq = EXCLUDED.seq
		WHERE x.expires <= EXCLUDED.received
	RETURNING source, id, seq
), acc AS MATERIALIZED (
	SELECT input.*, ids.seq FROM input JOIN ids USING (source, id)
), ev AS (
	INSERT INTO hookbox_events (seq, source, id, topic, received_at, headers, body, unrouted, origin, provider_at)
	SELECT seq, source, id, topic, received, headers, body, unrouted, origin, provider_at FROM acc
), dl AS (
	INSERT INTO hookbox_deliveries (event_seq, destination, state, due, run_at, created, updated, route, order_key)
	SELECT acc.seq, d.dest, 1, acc.received, acc.received, acc.received, acc.received, d.route, d.order_key
	FROM unnest($10::int[], $11::text[], $16::text[], $17::text[]) WITH ORDINALITY AS d(i, dest, route, order_key, ord) JOIN acc USING (i)
	ORDER BY d.ord
), n AS (
	SELECT pg_notify($12, $13) FROM (SELECT 1 FROM acc WHERE opens LIMIT 1) o
), ` + deltaCTEs(`SELECT i::bigint AS i, NULL::text AS name FROM acc`, "$13", "$14", 20) + `
SELECT i, seq FROM acc
UNION ALL SELECT -1, 0 FROM n`

// acceptGroup runs one try of a group's accept.
func (d *DB) acceptGroup(ctx context.Context, group []*acceptWrite) error {
	// One write per id goes to the database (ON CONFLICT cannot touch a row
	// twice in one statement); a later write of the same id in the group is
	// a duplicate of the first, whatever became of it.
	todo := make([]*acceptWrite, 0, len(group))
	first := make(map[idKey]bool, len(group))
	debounce := false
	for _, w := range group {
		w.dup, w.seq = false, 0
		k := idKey{w.e.Source, w.e.ID}
		if first[k] {
			w.dup = true
			continue
		}
		first[k] = true
		todo = append(todo, w)
		// Route counts (countRoutes) need the transaction too.
		debounce = debounce || w.plan != nil && len(w.plan.Debounce)+len(w.plan.Unkeyed)+len(w.plan.Filtered) > 0
	}
	var (
		is                []int32
		sources           []string
		ids, topics, hdrs [][]byte
		bodies            [][]byte
		received, expires []time.Time
		opens             []bool
		unrouted          []string
		origins           []string
		providerAt        []*time.Time
		dlIndex           []int32
		dlDest            []string
		dlRoute, dlOrder  []string
	)
	// The count changes go in the statement when nothing is debounced;
	// else after the debounce steps, whose results they count.
	var counts deltaArgs
	var delta app.CountDelta
	for i, w := range todo {
		e := w.e
		if !debounce {
			delta.Reset()
			countAccepted(&delta, e, w.plan)
			counts.add(int64(i), &delta)
		}
		is = append(is, int32(i))
		sources = append(sources, e.Source)
		ids = append(ids, []byte(e.ID))
		received = append(received, e.ReceivedAt)
		expires = append(expires, w.exp)
		topics = append(topics, []byte(e.Topic))
		hdrs = append(hdrs, encodeHeaders(e.Header))
		bodies = append(bodies, nonNil(e.Body))
		opens = append(opens, !w.plan.Empty())
		unrouted = append(unrouted, e.Unrouted)
		origins = append(origins, e.Origin)
		var at *time.Time
		if !e.ProviderAt.IsZero() {
			at = &e.ProviderAt
		}
		providerAt = append(providerAt, at)
		if w.plan != nil {
			for _, dest := range w.plan.Direct {
				dlIndex = append(dlIndex, int32(i))
				dlDest = append(dlDest, dest.Dest)
				dlRoute = append(dlRoute, dest.Route)
				// text holds no NUL nor invalid UTF-8: such bytes of an
				// order key become U+FFFD, which can only put two keys in
				// one group (held longer, never out of order).
				dlOrder = append(dlOrder, pgText(dest.OrderKey))
			}
		}
	}
	shard := d.takeShard()
	defer d.giveShard(shard)
	args := []any{is, sources, ids, received, expires, topics, hdrs, bodies, opens, dlIndex, dlDest, d.channel, d.node, shard, unrouted, dlRoute, dlOrder, origins, providerAt}
	args = append(args, counts.args()...)
	var accepted []*acceptWrite
	opened := false
	run := func(q querier) error {
		accepted, opened = accepted[:0], false
		rows, err := q.Query(ctx, acceptSQL, args...)
		if err != nil {
			return err
		}
		got := make([]bool, len(todo))
		var i int32
		var seq int64
		_, err = pgx.ForEachRow(rows, []any{&i, &seq}, func() error {
			if i < 0 {
				opened = true
				return nil
			}
			todo[i].seq = uint64(seq)
			got[i] = true
			return nil
		})
		if err != nil {
			return err
		}
		for i, w := range todo {
			if !got[i] {
				w.dup = true
			} else {
				accepted = append(accepted, w)
			}
		}
		return nil
	}
	var err error
	if !debounce {
		// One statement is its own transaction: one round trip, and the
		// commit (with its flush) when the statement returns.
		err = run(d.pool)
	} else {
		err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
			if err := run(tx); err != nil {
				return err
			}
			if err := applyDebounces(ctx, tx, accepted); err != nil {
				return err
			}
			return countAccepts(ctx, tx, accepted, d.node, shard)
		})
	}
	if err != nil {
		return err
	}
	d.commits.Add(1)
	d.writes.Add(uint64(len(group)))
	if opened {
		d.wake()
	}
	return nil
}

type idKey struct{ source, id string }

// querier is a pool or a transaction.
type querier interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}

func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// debounceStep is one debounced route's step of an accepted event.
type debounceStep struct {
	op  *app.DebounceOp
	seq uint64
	at  time.Time
}

// applyDebounces carries out the debounce steps of the accepted writes in
// tx, in (route, key) order, so that two transactions lock their keys in
// the same order and never wait on each other in a cycle.
func applyDebounces(ctx context.Context, tx pgx.Tx, accepted []*acceptWrite) error {
	var steps []debounceStep
	for _, w := range accepted {
		if w.plan == nil {
			continue
		}
		for _, op := range w.plan.Debounce {
			steps = append(steps, debounceStep{op: op, seq: w.seq, at: w.e.ReceivedAt})
		}
	}
	slices.SortStableFunc(steps, func(a, b debounceStep) int {
		return cmp.Or(cmp.Compare(a.op.Route, b.op.Route), cmp.Compare(a.op.Key, b.op.Key))
	})
	for _, s := range steps {
		if err := applyDebounce(ctx, tx, s.op, s.seq, s.at); err != nil {
			return fmt.Errorf("debounce %s: %w", s.op.Route, err)
		}
	}
	return nil
}

// countAccepts adds what the accepted writes count (as the domain says:
// countAccepted) in tx, once their debounce steps are applied; acceptSQL
// counted nothing of them.
func countAccepts(ctx context.Context, tx pgx.Tx, accepted []*acceptWrite, node string, shard int32) error {
	var delta app.CountDelta
	for _, w := range accepted {
		countAccepted(&delta, w.e, w.plan)
	}
	if err := addDelta(ctx, tx, &delta, node, shard); err != nil {
		return fmt.Errorf("count accepts: %w", err)
	}
	return nil
}
