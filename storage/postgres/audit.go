package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"hookbox/app"
)

var _ app.AuditStore = (*DB)(nil)

// AppendAudit adds e durably, setting its Seq.
func (d *DB) AppendAudit(ctx context.Context, e app.AuditEntry) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	e = app.CleanAuditEntry(e)
	_, err := d.pool.Exec(ctx, `INSERT INTO hookbox_audit (at, actor, via, "from", action, target, detail, result)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, micro(e.At), e.Actor, e.Via, e.From, e.Action, e.Target, e.Detail, e.Result)
	return d.committed(err)
}

// Audit returns the entries q selects, newest first.
func (d *DB) Audit(ctx context.Context, q app.AuditQuery) ([]app.AuditEntry, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if q.Actor != "" {
		add("actor = $%d", q.Actor)
	}
	if strings.HasSuffix(q.Action, ".") {
		add("starts_with(action, $%d)", q.Action)
	} else if q.Action != "" {
		add("action = $%d", q.Action)
	}
	if q.Result != "" {
		add("result = $%d", q.Result)
	}
	if !q.Since.IsZero() {
		add("at >= $%d", q.Since)
	}
	if !q.Until.IsZero() {
		add("at < $%d", q.Until)
	}
	if q.Before != 0 {
		add("seq < $%d", int64(q.Before))
	}
	sql := `SELECT seq, at, actor, via, "from", action, target, detail, result FROM hookbox_audit`
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	args = append(args, q.PageLimit())
	sql += fmt.Sprintf(" ORDER BY seq DESC LIMIT $%d", len(args))
	rows, err := d.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []app.AuditEntry
	for rows.Next() {
		var e app.AuditEntry
		var seq int64
		if err := rows.Scan(&seq, &e.At, &e.Actor, &e.Via, &e.From, &e.Action, &e.Target, &e.Detail, &e.Result); err != nil {
			return nil, err
		}
		e.Seq, e.At = uint64(seq), e.At.UTC()
		out = append(out, e)
	}
	return out, rows.Err()
}

// DeleteAuditBefore deletes at most limit of the oldest entries older than
// t and reports how many.
func (d *DB) DeleteAuditBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	tag, err := d.pool.Exec(ctx, `DELETE FROM hookbox_audit WHERE seq IN (
	SELECT seq FROM hookbox_audit WHERE at < $1 ORDER BY at LIMIT $2 FOR UPDATE SKIP LOCKED)`, t, limit)
	if d.committed(err) != nil {
		return 0, fmt.Errorf("delete audit entries: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
