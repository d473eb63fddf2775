package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

// hookbox_counts holds the status page's hourly counts, one row per
// (unix hour, node, shard). A transaction adds to the row of a shard it
// alone holds (takeShard), so concurrent commits never wait on each
// other's counts row; the page sums every node's and shard's rows.

// countFlushEvery is how often what AddCounts took is written.
const countFlushEvery = 5 * time.Second

// hourOf is the unix hour of a timestamptz, as app.Hour (an integer: a
// time zone never shifts it).
const hourOf = "floor(extract(epoch FROM "
const hourEnd = ") / 3600)::bigint"

// countsUpsert adds to a shard's row; $1 node, $2 shard.
const countsUpsert = `
	ON CONFLICT (hour, node, shard) DO UPDATE SET received = c.received + EXCLUDED.received,
		accepted = c.accepted + EXCLUDED.accepted, duplicate = c.duplicate + EXCLUDED.duplicate,
		rejected = c.rejected + EXCLUDED.rejected, debounced = c.debounced + EXCLUDED.debounced,
		delivered = c.delivered + EXCLUDED.delivered, retrying = c.retrying + EXCLUDED.retrying,
		dead = c.dead + EXCLUDED.dead`

// countColumns are hookbox_counts' columns in app.Kind order.
const countColumns = "received, accepted, duplicate, rejected, debounced, delivered, retrying, dead"

// counts holds what AddCounts took until the flusher writes it.
type counts struct {
	mu      sync.Mutex
	pending map[int64]*app.Counts
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
	h := app.Hour(at)
	if cur := d.counts.pending[h]; cur != nil {
		cur.Add(c)
	} else {
		d.counts.pending[h] = &c
	}
	d.counts.mu.Unlock()
}

// flushCounts writes what AddCounts took; on failure it keeps it for the
// next try.
func (d *DB) flushCounts(ctx context.Context) error {
	d.counts.flushing.Lock()
	defer d.counts.flushing.Unlock()
	d.counts.mu.Lock()
	taken := d.counts.pending
	d.counts.pending = map[int64]*app.Counts{}
	d.counts.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	cols := make([][]int64, app.NumKinds)
	var hours []int64
	for h, c := range taken {
		hours = append(hours, h)
		for k := range cols {
			cols[k] = append(cols[k], int64(c[k]))
		}
	}
	shard := d.takeShard()
	defer d.giveShard(shard)
	args := []any{d.node, shard, hours}
	for _, c := range cols {
		args = append(args, c)
	}
	_, err := d.pool.Exec(ctx, `INSERT INTO hookbox_counts AS c (hour, node, shard, `+countColumns+`)
	SELECT h, $1, $2, k0, k1, k2, k3, k4, k5, k6, k7 FROM unnest($3::bigint[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[])
		AS t(h, k0, k1, k2, k3, k4, k5, k6, k7)`+countsUpsert, args...)
	if err != nil {
		d.counts.mu.Lock()
		for h, c := range taken {
			if cur := d.counts.pending[h]; cur != nil {
				cur.Add(*c)
			} else {
				d.counts.pending[h] = c
			}
		}
		d.counts.mu.Unlock()
		return fmt.Errorf("write counts: %w", err)
	}
	return nil
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
			ctx, cancel := opCtx()
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
func (d *DB) HourlyCounts(from, to time.Time) ([]app.HourCounts, error) {
	first, last := app.Hour(from), app.Hour(to)
	ctx, cancel := opCtx()
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
	for h, c := range d.counts.pending {
		if h < first || h > last {
			continue
		}
		if cur := byHour[h]; cur != nil {
			cur.Add(*c)
		} else {
			cc := *c
			byHour[h] = &cc
		}
	}
	d.counts.mu.Unlock()
	out := make([]app.HourCounts, 0, len(byHour))
	for h := first; h <= last; h++ {
		if c := byHour[h]; c != nil {
			out = append(out, app.HourCounts{Hour: app.HourStart(h), Counts: *c})
		}
	}
	return out, nil
}

// PruneCounts forgets the hours that end at or before t, on every node.
func (d *DB) PruneCounts(t time.Time) (int, error) {
	end := app.Hour(t)
	ctx, cancel := opCtx()
	defer cancel()
	tag, err := d.pool.Exec(ctx, "DELETE FROM hookbox_counts WHERE hour < $1", end)
	if err != nil {
		return 0, fmt.Errorf("prune counts: %w", err)
	}
	d.counts.mu.Lock()
	for h := range d.counts.pending {
		if h < end {
			delete(d.counts.pending, h)
		}
	}
	d.counts.mu.Unlock()
	return int(tag.RowsAffected()), nil
}
