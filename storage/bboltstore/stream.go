package bboltstore

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

var _ app.StreamStore = (*DB)(nil)

// EventsAfter returns up to limit whole events whose seq is above after,
// in ascending seq, stopping once their bodies reach maxBytes: a cursor seeks to after+1 and walks forward, so its
// cost is the page, not the history. An event that cannot be decoded is
// skipped (it is poisoned; the list pages show it as unreadable). bbolt
// commits in seq order, so there is never a gap to wait for.
func (d *DB) EventsAfter(ctx context.Context, after uint64, limit, maxBytes int) ([]*app.Event, error) {
	if limit <= 0 || maxBytes <= 0 || after == math.MaxUint64 {
		return nil, nil
	}
	var out []*app.Event
	err := d.view(ctx, func(tx *bolt.Tx) error {
		out = out[:0]
		size := 0
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Seek(seqKey(after + 1)); k != nil && len(out) < limit && size < maxBytes; k, v = c.Next() {
			if len(k) != 8 {
				continue
			}
			e, err := decodeEvent(v) // copies out of the transaction
			if err != nil || e == nil {
				continue
			}
			e.Seq = binary.BigEndian.Uint64(k)
			out = append(out, e)
			size += len(e.Body)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("events after %d: %w", after, err)
	}
	return out, nil
}
