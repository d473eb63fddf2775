package postgres

import (
	"context"
	"fmt"
	"math"

	"hookbox/app"
)

var _ app.StreamStore = (*DB)(nil)

// EventsAfter returns up to limit whole events whose seq is above after,
// in ascending seq, accepted by any node, stopping once their bodies reach
// maxBytes (the rows not read are discarded as they arrive): one range scan of the primary
// key from after, so its cost is the page, not the history. Seqs are
// handed out before commit, so an event with a lower seq may commit after
// a higher one was returned; the reader waits for such gaps
// (app/stream's Hub).
func (d *DB) EventsAfter(ctx context.Context, after uint64, limit, maxBytes int) ([]*app.Event, error) {
	if limit <= 0 || maxBytes <= 0 || after >= math.MaxInt64 {
		return nil, nil
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	rows, err := d.pool.Query(ctx, "SELECT "+eventCols+" FROM hookbox_events e WHERE e.seq > $1 ORDER BY e.seq LIMIT $2", int64(after), limit)
	if err != nil {
		return nil, fmt.Errorf("events after %d: %w", after, err)
	}
	defer rows.Close()
	var out []*app.Event
	size := 0
	for size < maxBytes && rows.Next() {
		e := &app.Event{}
		dest, finish := eventDest(e)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("events after %d: %w", after, err)
		}
		if err := finish(); err != nil {
			continue // headers that cannot be decoded: skipped, as the lists do
		}
		out = append(out, e)
		size += len(e.Body)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events after %d: %w", after, err)
	}
	return out, nil
}
