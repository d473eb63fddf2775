package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"hookbox/app"
)

// hookbox_counts holds the status page's hourly counts, one row per
// (unix hour, node, shard). A transaction adds to the row of a shard it
// alone holds (takeShard), so concurrent commits never wait on each
// other's counts row; the page sums every node's and shard's rows.

// countFlushEvery is how often what AddCounts took is written.
const countFlushEvery = 5 * time.Second

// countsUpsert adds to a shard's row; $1 node, $2 shard.
const countsUpsert = `
	ON CONFLICT (hour, node, shard) DO UPDATE SET received = c.received + EXCLUDED.received,
		accepted = c.accepted + EXCLUDED.accepted, duplicate = c.duplicate + EXCLUDED.duplicate,
		rejected = c.rejected + EXCLUDED.rejected, debounced = c.debounced + EXCLUDED.debounced,
		delivered = c.delivered + EXCLUDED.delivered, retrying = c.retrying + EXCLUDED.retrying,
		dead = c.dead + EXCLUDED.dead`

// countColumns are hookbox_counts' columns in app.Kind order.
const countColumns = "received, accepted, duplicate, rejected, debounced, delivered, retrying, dead"

// nameUpsert adds to a shard's row of hookbox_name_counts (alias c).
const nameUpsert = `
	ON CONFLICT (hour, kind, name, node, shard) DO UPDATE SET n = c.n + EXCLUDED.n`

// lastUpsert keeps the newer (on a tie, the inserted) of a shard's row of hookbox_last (alias l)
// and the one inserted.
const lastUpsert = `
	ON CONFLICT (kind, name, node, shard) DO UPDATE SET at = EXCLUDED.at, text = EXCLUDED.text WHERE l.at <= EXCLUDED.at`

// counts holds what AddCounts and AddNamed took until the flusher writes it.
type counts struct {
	mu      sync.Mutex
	pending app.CountTally // the domain's rules: sum, take, give back, prune
	// flushing is held while pending is written, and by readers, so that
	// no reader sees a flush half done (neither in pending nor committed).
	flushing sync.Mutex

	shards chan int32 // free shards
	next   int32      // guarded by mu: the next new shard
}

// takeShard returns a shard that no other transaction of this node holds
// until giveShard.
func (d *DB) takeShard() int32 {
	select {
	case s := <-d.counts.shards:
		return s
	default:
	}
	d.counts.mu.Lock()
	defer d.counts.mu.Unlock()
	d.counts.next++
	return d.counts.next
}

func (d *DB) giveShard(s int32) {
	select {
	case d.counts.shards <- s:
	default:
	}
}

// AddCounts adds c to the hour of at; it is written within
// countFlushEvery, and at Close.
func (d *DB) AddCounts(at time.Time, c app.Counts) {
	d.counts.mu.Lock()
	d.counts.pending.Add(app.Hour(at), c)
	d.counts.mu.Unlock()
}

// flushCounts writes what AddCounts took; on failure it keeps it for the
// next try.
func (d *DB) flushCounts(ctx context.Context) error {
	d.counts.flushing.Lock()
	defer d.counts.flushing.Unlock()
	d.counts.mu.Lock()
	taken := d.counts.pending.Take()
	d.counts.mu.Unlock()
	if taken.Empty() {
		return nil
	}
	giveBack := func() {
		d.counts.mu.Lock()
		d.counts.pending.AddTally(taken)
		d.counts.mu.Unlock()
	}
	delta := taken.Delta()
	shard := d.takeShard()
	defer d.giveShard(shard)
	err := addDelta(ctx, d.pool, &delta, d.node, shard)
	if err != nil {
		giveBack()
		return fmt.Errorf("write counts: %w", err)
	}
	return nil
}

// AddNamed adds n to (k, name) in the hour of at; it is written within
// countFlushEvery, and at Close.
func (d *DB) AddNamed(at time.Time, k app.NameKind, name string, n uint64) {
	d.counts.mu.Lock()
	d.counts.pending.AddNamed(app.Hour(at), app.Named{Kind: k, Name: name}, n)
	d.counts.mu.Unlock()
}

// NamedCounts sums the counts by name of the hours from from's to to's,
// both included, over every node, with what this node's AddNamed holds.
func (d *DB) NamedCounts(ctx context.Context, from, to time.Time) (map[app.Named]uint64, error) {
	first, last := app.Hour(from), app.Hour(to)
	ctx, cancel := opCtx(ctx)
	defer cancel()
	d.counts.flushing.Lock()
	defer d.counts.flushing.Unlock()
	rows, err := d.pool.Query(ctx, `SELECT kind, name, sum(n) FROM hookbox_name_counts WHERE hour BETWEEN $1 AND $2 GROUP BY kind, name`, first, last)
	if err != nil {
		return nil, fmt.Errorf("counts by name: %w", err)
	}
	out := map[app.Named]uint64{}
	var kind int16
	var name string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&kind, &name, &n}, func() error {
		out[app.Named{Kind: app.NameKind(kind), Name: name}] += uint64(n)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("counts by name: %w", err)
	}
	d.counts.mu.Lock()
	d.counts.pending.NamedInto(out, first, last)
	d.counts.mu.Unlock()
	return out, nil
}

// Lasts returns the last accepted event of each source and the last
// failed attempt of each destination, the newest of every node's.
func (d *DB) Lasts(ctx context.Context) (map[app.Named]app.Last, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	rows, err := d.pool.Query(ctx, `SELECT DISTINCT ON (kind, name) kind, name, at, text FROM hookbox_last ORDER BY kind, name, at DESC`)
	if err != nil {
		return nil, fmt.Errorf("lasts: %w", err)
	}
	out := map[app.Named]app.Last{}
	var kind int16
	var name, text string
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&kind, &name, &at, &text}, func() error {
		out[app.Named{Kind: app.NameKind(kind), Name: name}] = app.Last{At: at.UTC(), Text: text}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("lasts: %w", err)
	}
	return out, nil
}

// flusher writes what AddCounts took every countFlushEvery until Close.
func (d *DB) flusher() {
	defer d.done.Done()
	t := time.NewTicker(countFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			ctx, cancel := opCtx(context.Background())
			if err := d.flushCounts(ctx); err != nil {
				d.logger.Warn("write the hourly counts (kept for the next try)", "error", err)
			}
			cancel()
		}
	}
}

// HourlyCounts returns the counts of the hours from from's to to's, both
// included, oldest first, summed over every node, with what this node's
// AddCounts holds added.
func (d *DB) HourlyCounts(ctx context.Context, from, to time.Time) ([]app.HourCounts, error) {
	first, last := app.Hour(from), app.Hour(to)
	ctx, cancel := opCtx(ctx)
	defer cancel()
	d.counts.flushing.Lock()
	defer d.counts.flushing.Unlock()
	rows, err := d.pool.Query(ctx, `SELECT hour, sum(received), sum(accepted), sum(duplicate), sum(rejected), sum(debounced),
		sum(delivered), sum(retrying), sum(dead) FROM hookbox_counts WHERE hour BETWEEN $1 AND $2 GROUP BY hour`, first, last)
	if err != nil {
		return nil, fmt.Errorf("hourly counts: %w", err)
	}
	byHour := map[int64]*app.Counts{}
	var h int64
	var v [app.NumKinds]int64
	dst := []any{&h}
	for k := range v {
		dst = append(dst, &v[k])
	}
	if _, err := pgx.ForEachRow(rows, dst, func() error {
		var c app.Counts
		for k := range v {
			c[k] = uint64(v[k])
		}
		byHour[h] = &c
		return nil
	}); err != nil {
		return nil, fmt.Errorf("hourly counts: %w", err)
	}
	d.counts.mu.Lock()
	d.counts.pending.HoursInto(byHour, first, last)
	d.counts.mu.Unlock()
	return app.HourlyOf(byHour, first, last), nil
}

// PruneCounts forgets the hours that end at or before t, on every node.
func (d *DB) PruneCounts(ctx context.Context, t time.Time) (int, error) {
	end := app.Hour(t)
	ctx, cancel := opCtx(ctx)
	defer cancel()
	tag, err := d.pool.Exec(ctx, "DELETE FROM hookbox_counts WHERE hour < $1", end)
	if err != nil {
		return 0, fmt.Errorf("prune counts: %w", err)
	}
	if _, err := d.pool.Exec(ctx, "DELETE FROM hookbox_name_counts WHERE hour < $1", end); err != nil {
		return 0, fmt.Errorf("prune counts by name: %w", err)
	}
	d.counts.mu.Lock()
	d.counts.pending.Prune(end)
	d.counts.mu.Unlock()
	return int(tag.RowsAffected()), nil
}

// The domain's counting rules, as the store applies them: what an
// accepted event and a recorded attempt change in the counts. They are
// app.CountDelta's; a test replaces them (export_test.go) to show that
// the store counts what they say and nothing else.
var (
	countAccepted = (*app.CountDelta).Accepted
	countAttempt  = (*app.CountDelta).Attempt
)

// addDelta adds the count changes delta (as the domain computed them) to
// shard's rows of node, in tx (a transaction, or the pool: the statement
// is its own): deltaCTEs' upserts, in one statement.
func addDelta(ctx context.Context, tx execer, delta *app.CountDelta, node string, shard int32) error {
	if delta.Empty() {
		return nil
	}
	var args deltaArgs
	args.add(0, delta)
	_, err := tx.Exec(ctx, addDeltaSQL, append([]any{node, shard}, args.args()...)...)
	return err
}

// execer is a pool or a transaction.
type execer interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}

// addDeltaSQL is addDelta's statement: every change is the one write's (0).
var addDeltaSQL = `WITH ` + deltaCTEs(`SELECT 0::bigint AS i, NULL::text AS name`, "$1", "$2", 3) + `
SELECT 1`

// ownName is the name a count rule is given for a write's destination
// where the store reads it in the same statement as it counts (a recorded
// attempt's delivery, RecordAttempts): deltaArgs passes it as NULL, which
// deltaCTEs replaces by the written row's name. It cannot be a real name:
// PostgreSQL's text holds no NUL (pgText).
const ownName = "\x00own"

// deltaArgs is what some writes change in the counts (app.CountDelta, one
// per write) as the arrays deltaCTEs reads, each change tagged with its
// write (i), so that a statement counts only the writes it made.
type deltaArgs struct {
	kI, kH, kN []int64 // kinds: write, unix hour, n
	kK         []int16 // kind (app.Kind)
	nI, nH, nN []int64 // by name: write, unix hour, n
	nK         []int16 // kind (app.NameKind)
	nName      []pgtype.Text
	lI         []int64 // lasts: write
	lK         []int16
	lName      []pgtype.Text
	lAt        []time.Time
	lText      []string
}

// add appends write i's changes, delta.
func (a *deltaArgs) add(i int64, delta *app.CountDelta) {
	for _, k := range delta.Kinds {
		a.kI, a.kH, a.kK, a.kN = append(a.kI, i), append(a.kH, app.Hour(k.At)), append(a.kK, int16(k.Kind)), append(a.kN, int64(k.N))
	}
	for _, n := range delta.Named {
		a.nI, a.nH, a.nK, a.nN = append(a.nI, i), append(a.nH, app.Hour(n.At)), append(a.nK, int16(n.Kind)), append(a.nN, int64(n.N))
		a.nName = append(a.nName, nameArg(n.Name))
	}
	for _, l := range delta.Lasts {
		a.lI, a.lK, a.lAt, a.lText = append(a.lI, i), append(a.lK, int16(l.Kind)), append(a.lAt, l.Last.At), append(a.lText, pgText(l.Last.Text))
		a.lName = append(a.lName, nameArg(l.Name))
	}
}

// nameArg is name as deltaCTEs reads it: NULL for ownName.
func nameArg(name string) pgtype.Text {
	return pgtype.Text{String: pgText(name), Valid: name != ownName}
}

// args are a's arrays in the order of deltaCTEs' parameters.
func (a *deltaArgs) args() []any {
	return []any{a.kI, a.kH, a.kK, a.kN, a.nI, a.nH, a.nK, a.nName, a.nN, a.lI, a.lK, a.lName, a.lAt, a.lText}
}

// deltaCTEs is the SQL, written once, that adds the count changes of
// deltaArgs (its 14 arrays from parameter $first on) to the counts of
// shard's row of node (SQL expressions), as three CTEs (count_kinds,
// count_names, count_lasts) for a WITH clause. Only the changes of the
// writes that written lists count: a query of (i bigint, name text), the
// writes the statement made and the name a NULL name stands for
// (ownName). The kinds are pivoted into hookbox_counts' columns, the
// counts by name summed, and of the lasts of each name the latest kept
// (on a tie, the one noted later), as bbolt's foldCounts does. It decides
// nothing: what counts is app.CountDelta's.
func deltaCTEs(written, node, shard string, first int) string {
	p := func(n int) string { return "$" + strconv.Itoa(first+n) }
	var kinds strings.Builder
	for k := range app.NumKinds {
		fmt.Fprintf(&kinds, ", coalesce(sum(t.n) FILTER (WHERE t.k = %d), 0)", k)
	}
	return `count_kinds AS (
	INSERT INTO hookbox_counts AS c (hour, node, shard, ` + countColumns + `)
	SELECT t.h, ` + node + `, ` + shard + kinds.String() + `
	FROM unnest(` + p(0) + `::bigint[], ` + p(1) + `::bigint[], ` + p(2) + `::smallint[], ` + p(3) + `::bigint[]) AS t(i, h, k, n)
		JOIN (` + written + `) w USING (i)
	GROUP BY t.h` + countsUpsert + `
), count_names AS (
	INSERT INTO hookbox_name_counts AS c (hour, kind, name, node, shard, n)
	SELECT t.h, t.k, coalesce(t.name, w.name), ` + node + `, ` + shard + `, sum(t.n)
	FROM unnest(` + p(4) + `::bigint[], ` + p(5) + `::bigint[], ` + p(6) + `::smallint[], ` + p(7) + `::text[], ` + p(8) + `::bigint[]) AS t(i, h, k, name, n)
		JOIN (` + written + `) w USING (i)
	GROUP BY 1, 2, 3` + nameUpsert + `
), count_lasts AS (
	INSERT INTO hookbox_last AS l (kind, name, node, shard, at, text)
	SELECT DISTINCT ON (t.k, coalesce(t.name, w.name)) t.k, coalesce(t.name, w.name), ` + node + `, ` + shard + `, t.at, t.text
	FROM unnest(` + p(9) + `::bigint[], ` + p(10) + `::smallint[], ` + p(11) + `::text[], ` + p(12) + `::timestamptz[], ` + p(13) + `::text[])
		WITH ORDINALITY AS t(i, k, name, at, text, ord)
		JOIN (` + written + `) w USING (i)
	ORDER BY t.k, coalesce(t.name, w.name), t.at DESC, t.ord DESC` + lastUpsert + `
)`
}
