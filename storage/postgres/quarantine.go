package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

var _ app.QuarantineStore = (*DB)(nil)

// KeepQuarantined adds what QuarantineFit takes of qs in one transaction.
// Each source's quarantine is decided under a transaction advisory lock
// of its name, so that two nodes cannot both fill its last place.
func (d *DB) KeepQuarantined(ctx context.Context, qs []*app.Quarantined, l app.QuarantineLimits) ([]bool, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	kept := make([]bool, len(qs))
	ids := make([]uint64, len(qs))
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		clear(kept)
		for i, q := range qs {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext(current_schema() || '/' || $2))", lockQuarantine, q.Source); err != nil {
				return fmt.Errorf("lock the quarantine of %s: %w", q.Source, err)
			}
			held, err := heldOf(ctx, tx, q.Source)
			if err != nil {
				return err
			}
			ok, evict := app.QuarantineFit(held, q, l)
			if !ok {
				continue
			}
			if len(evict) > 0 {
				if _, err := tx.Exec(ctx, "DELETE FROM hookbox_quarantine WHERE source = $1 AND id = ANY($2)", q.Source, int64s(evict)); err != nil {
					return err
				}
			}
			var id int64
			if err := tx.QueryRow(ctx, `INSERT INTO hookbox_quarantine (source, at, client, reason, size, headers, body)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`, q.Source, micro(q.At), q.Client, q.Reason, q.Size(), encodeHeaders(q.Header), q.Body).Scan(&id); err != nil {
				return err
			}
			kept[i], ids[i] = true, uint64(id)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, q := range qs {
		if kept[i] {
			q.ID = ids[i]
		}
	}
	return kept, nil
}

// heldOf loads source's quarantine as QuarantineFit reads it.
func heldOf(ctx context.Context, tx pgx.Tx, source string) ([]app.QuarantineHeld, error) {
	rows, err := tx.Query(ctx, "SELECT id, at, client, size FROM hookbox_quarantine WHERE source = $1 ORDER BY id", source)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var held []app.QuarantineHeld
	for rows.Next() {
		var h app.QuarantineHeld
		var id int64
		if err := rows.Scan(&id, &h.At, &h.Client, &h.Size); err != nil {
			return nil, err
		}
		h.ID = uint64(id)
		held = append(held, h)
	}
	return held, rows.Err()
}

func int64s(ids []uint64) []int64 {
	out := make([]int64, len(ids))
	for i, id := range ids {
		out[i] = int64(id)
	}
	return out
}

// Quarantined returns up to limit of source's kept requests after the id
// after, oldest first.
func (d *DB) Quarantined(ctx context.Context, source string, after uint64, limit int) ([]app.Quarantined, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	rows, err := d.pool.Query(ctx, `SELECT id, at, client, reason, headers, body FROM hookbox_quarantine
WHERE source = $1 AND id > $2 ORDER BY id LIMIT $3`, source, int64(min(after, 1<<63-1)), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []app.Quarantined
	for rows.Next() {
		q := app.Quarantined{Source: source}
		var id int64
		var headers []byte
		if err := rows.Scan(&id, &q.At, &q.Client, &q.Reason, &headers, &q.Body); err != nil {
			return nil, err
		}
		if q.Header, err = decodeHeaders(headers); err != nil {
			return nil, fmt.Errorf("quarantined request %d: %w", id, err)
		}
		q.ID, q.At = uint64(id), q.At.UTC()
		out = append(out, q)
	}
	return out, rows.Err()
}

// QuarantineUsage reports how many requests source keeps and their bytes.
func (d *DB) QuarantineUsage(ctx context.Context, source string) (int, int64, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var n, size int64
	err := d.pool.QueryRow(ctx, "SELECT count(*), coalesce(sum(size), 0) FROM hookbox_quarantine WHERE source = $1", source).Scan(&n, &size)
	return int(n), size, err
}

// DeleteQuarantined deletes source's requests of ids, all when ids is nil.
func (d *DB) DeleteQuarantined(ctx context.Context, source string, ids []uint64) (int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var tag interface{ RowsAffected() int64 }
	var err error
	if ids == nil {
		tag, err = d.pool.Exec(ctx, "DELETE FROM hookbox_quarantine WHERE source = $1", source)
	} else {
		tag, err = d.pool.Exec(ctx, "DELETE FROM hookbox_quarantine WHERE source = $1 AND id = ANY($2)", source, int64s(ids))
	}
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// DeleteQuarantinedBefore deletes at most limit requests that arrived
// before t.
func (d *DB) DeleteQuarantinedBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	tag, err := d.pool.Exec(ctx, `DELETE FROM hookbox_quarantine WHERE id IN
(SELECT id FROM hookbox_quarantine WHERE at < $1 ORDER BY at LIMIT $2)`, t, limit)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}
