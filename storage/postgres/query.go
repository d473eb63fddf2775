package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"hookbox/app"
)

// maxScan bounds how many events one list page examines when filters are
// selective, as in the bbolt store: the caller pages on with the cursor.
const maxScan = 20000

// failingSQL is app.DeliveryWord's "failing" for a row of
// hookbox_deliveries (state 1 is app.Pending): pending after an attempt.
// The event status and CountRetrying both filter by it.
const failingSQL = `(state = 1 AND attempts > 0)`

// statusSQL is an event's status from its deliveries: app.EventWord, the
// worst of dead, failing, pending, delivered; "merged" when debouncing
// folded it into another (that went out, or whose window is still open);
// "waiting" when it is the event of a debounced delivery whose window is
// open; else "unrouted". w is the event's row.
const statusSQL = `(SELECT CASE max(CASE WHEN d.state = 3 THEN 4 WHEN ` + failingSQL + ` THEN 3 WHEN d.state = 1 THEN 2 ELSE 1 END)
		WHEN 4 THEN '` + app.StateDead + `' WHEN 3 THEN '` + app.StateFailing + `' WHEN 2 THEN '` + app.StatePending + `' WHEN 1 THEN '` + app.StateDelivered + `'
		ELSE CASE WHEN EXISTS (SELECT 1 FROM hookbox_merged m WHERE m.merged_seq = w.seq) THEN '` + app.StateMerged + `'
			WHEN EXISTS (SELECT 1 FROM hookbox_debounce k WHERE k.due IS NOT NULL AND w.seq = ANY(k.merged)) THEN '` + app.StateMerged + `'
			WHEN EXISTS (SELECT 1 FROM hookbox_debounce k WHERE k.event_seq = w.seq AND k.due IS NOT NULL) THEN '` + app.StateWaiting + `'
			ELSE '` + app.StateUnrouted + `' END END
	FROM hookbox_deliveries d WHERE d.event_seq = w.seq)`

// ListEvents returns events matching q, newest first, and the cursor for
// the next page (0 when there is none). It reads the newest events below
// the cursor by the primary key (or, for one source, by
// hookbox_events_source_seq), at most maxScan of them per page, so a page
// costs the same however many events are stored. A body search (q.Q)
// narrows those events in the same statement (search.go): the window is
// of the events that match it.
func (d *DB) ListEvents(ctx context.Context, q app.EventQuery) ([]app.EventSummary, uint64, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	return listEvents(ctx, d.pool, q)
}

// rowQuerier runs statements: the pool, or a search's budgeted
// transaction (search.go).
type rowQuerier interface {
	querier
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// listEvents is ListEvents on db.
func listEvents(ctx context.Context, db rowQuerier, q app.EventQuery) ([]app.EventSummary, uint64, error) {
	if q.Limit <= 0 || q.Limit > 500 {
		q.Limit = 50
	}
	if q.Q != "" {
		if err := app.CheckSearch(q.Q); err != nil {
			return nil, 0, err
		}
	}
	if q.ID != "" {
		return findByID(ctx, db, q)
	}
	before := int64(math.MaxInt64)
	switch {
	case q.Before > 0:
		before = int64(min(q.Before, math.MaxInt64))
	case !q.Until.IsZero():
		// Start at the newest event received by Until (arrival follows seq).
		var seq int64
		err := db.QueryRow(ctx, "SELECT seq FROM hookbox_events WHERE received_at <= $1 ORDER BY received_at DESC LIMIT 1", q.Until).Scan(&seq)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, 0, nil
		}
		if err != nil {
			return nil, 0, err
		}
		before = seq + 1
	}
	args := []any{before}
	window := "SELECT * FROM hookbox_events WHERE seq < $1"
	if q.Source != "" {
		args = append(args, q.Source)
		window += " AND source = $" + strconv.Itoa(len(args))
	}
	if q.Q != "" {
		pattern, lower := searchArgs(q.Q)
		args = append(args, pattern, lower)
		window += " AND " + searchSQL("hookbox_events", len(args)-1, len(args))
	}
	window += " ORDER BY seq DESC LIMIT " + strconv.Itoa(maxScan)
	rows, err := summaries(ctx, db, window, q, args)
	if err != nil || len(rows) == 0 && !filtered(q) {
		return rows, 0, err
	}
	if len(rows) > q.Limit {
		rows = rows[:q.Limit]
		return rows, rows[len(rows)-1].Seq, nil
	}
	if !filtered(q) {
		return rows, 0, nil
	}
	// Fewer than a page matched: if the window was full, page on below it
	// (unless it already reached before Since: older ones cannot match).
	var n int
	var low *int64
	var oldest *time.Time
	err = db.QueryRow(ctx, "SELECT count(*), min(seq), min(received_at) FROM ("+strings.Replace(window, "SELECT *", "SELECT seq, received_at", 1)+") w", args...).Scan(&n, &low, &oldest)
	if err != nil || n < maxScan || low == nil || !q.Since.IsZero() && oldest != nil && oldest.Before(q.Since) {
		return rows, 0, err
	}
	return rows, uint64(*low), nil
}

// filtered reports whether q selects among the events (beyond the cursor
// and the source, which the window itself applies).
func filtered(q app.EventQuery) bool {
	return q.Topic != "" || q.Status != "" || !q.Since.IsZero() || !q.Until.IsZero()
}

// summaries returns up to q.Limit+1 rows of the events that window (a
// query of hookbox_events, with its own args) selects and q's filters
// keep, newest first.
func summaries(ctx context.Context, db querier, window string, q app.EventQuery, args []any) ([]app.EventSummary, error) {
	var conds []string
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "$$", "$"+strconv.Itoa(len(args))))
	}
	if q.Topic != "" {
		add("topic LIKE $$::bytea", []byte(globToLike(q.Topic)))
	}
	if !q.Until.IsZero() {
		add("received_at <= $$", q.Until)
	}
	if !q.Since.IsZero() {
		add("received_at >= $$", q.Since)
	}
	if q.Status != "" {
		add("status = $$", q.Status)
	}
	where := ""
	if len(conds) > 0 {
		where = " WHERE " + strings.Join(conds, " AND ")
	}
	args = append(args, q.Limit+1)
	sql := `SELECT seq, source, id, topic, received_at, size, status,
		CASE WHEN status = '` + app.StateWaiting + `' THEN (SELECT min(k.due) FROM hookbox_debounce k WHERE k.event_seq = s.seq) END FROM (
	SELECT w.seq, w.source, w.id, w.topic, w.received_at, length(w.body) AS size, ` + statusSQL + ` AS status
	FROM (` + window + `) w
) s` + where + " ORDER BY seq DESC LIMIT $" + strconv.Itoa(len(args))
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (app.EventSummary, error) {
		var s app.EventSummary
		var seq int64
		var id, topic []byte
		var until pgtype.Timestamptz
		err := r.Scan(&seq, &s.Source, &id, &topic, &s.ReceivedAt, &s.Size, &s.Status, &until)
		s.Seq, s.ID, s.Topic, s.WaitingUntil = uint64(seq), string(id), string(topic), until.Time
		return s, err
	})
}

// globToLike turns app.Glob's pattern ('*' any run, '?' one byte) into a
// LIKE pattern with '\' as the escape; both work on bytes.
func globToLike(g string) string {
	var b strings.Builder
	for i := 0; i < len(g); i++ {
		switch c := g[i]; c {
		case '*':
			b.WriteByte('%')
		case '?':
			b.WriteByte('_')
		case '%', '_', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// findByID lists the events accepted with id: of q.Source, or of every
// source (found by a loose scan of the primary key: one probe per source).
func findByID(ctx context.Context, db rowQuerier, q app.EventQuery) ([]app.EventSummary, uint64, error) {
	var rows pgx.Rows
	var err error
	if q.Source != "" {
		rows, err = db.Query(ctx, "SELECT seq FROM hookbox_event_ids WHERE source = $1 AND id = $2", q.Source, []byte(q.ID))
	} else {
		rows, err = db.Query(ctx, `WITH RECURSIVE s AS (
	(SELECT source FROM hookbox_event_ids ORDER BY source LIMIT 1)
	UNION ALL
	SELECT (SELECT x.source FROM hookbox_event_ids x WHERE x.source > s.source ORDER BY x.source LIMIT 1) FROM s WHERE s.source IS NOT NULL
) SELECT x.seq FROM s, LATERAL (SELECT x.seq FROM hookbox_event_ids x WHERE x.source = s.source AND x.id = $1 LIMIT 1) x`, []byte(q.ID))
	}
	if err != nil {
		return nil, 0, err
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(seqs) == 0 {
		return nil, 0, err
	}
	window, args := "SELECT * FROM hookbox_events WHERE seq = ANY($1)", []any{seqs}
	if q.Q != "" {
		pattern, lower := searchArgs(q.Q)
		args = append(args, pattern, lower)
		window += " AND " + searchSQL("hookbox_events", 2, 3)
	}
	out, err := summaries(ctx, db, window, app.EventQuery{Topic: q.Topic, Status: q.Status, Limit: q.Limit}, args)
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, 0, err
}

// Event returns the event stored under seq, or nil when there is none.
func (d *DB) Event(ctx context.Context, seq uint64) (*app.Event, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	e := &app.Event{}
	dest, finish := eventDest(e)
	err := d.pool.QueryRow(ctx, "SELECT "+eventCols+", e.unrouted FROM hookbox_events e WHERE e.seq = $1", int64(seq)).Scan(append(dest, &e.Unrouted)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err == nil {
		err = finish()
	}
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", seq, err)
	}
	return e, nil
}

// LookupID reports whether source's id is remembered, until when, and the
// sequence number of the event that was accepted with it.
func (d *DB) LookupID(ctx context.Context, source, id string) (expires time.Time, seq uint64, ok bool, err error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var s int64
	err = d.pool.QueryRow(ctx, "SELECT expires, seq FROM hookbox_event_ids WHERE source = $1 AND id = $2", source, []byte(id)).Scan(&expires, &s)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, 0, false, nil
	}
	return expires, uint64(s), err == nil, err
}

// Counts reports how many ids are remembered and how many events are
// stored (each a count of its table).
func (d *DB) Counts(ctx context.Context) (ids, events int, err error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	err = d.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM hookbox_event_ids), (SELECT count(*) FROM hookbox_events)").Scan(&ids, &events)
	return ids, events, err
}

// Meta returns the value stored under name, or nil.
func (d *DB) Meta(ctx context.Context, name string) ([]byte, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var v []byte
	err := d.pool.QueryRow(ctx, "SELECT value FROM hookbox_meta WHERE name = $1", name).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && len(v) == 0 {
		return nil, nil
	}
	return v, err
}

// SetMeta stores value under name, durably.
func (d *DB) SetMeta(ctx context.Context, name string, value []byte) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	_, err := d.pool.Exec(ctx, "INSERT INTO hookbox_meta (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = EXCLUDED.value", name, nonNil(value))
	return d.committed(err)
}

// ForgetExpiredIDs forgets at most limit ids whose expiry is at or before
// now, oldest expiry first (hookbox_event_ids_expires), and reports how many.
func (d *DB) ForgetExpiredIDs(ctx context.Context, now time.Time, limit int) (int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	tag, err := d.pool.Exec(ctx, `WITH x AS (
	SELECT source, id FROM hookbox_event_ids WHERE expires <= $1 ORDER BY expires LIMIT $2 FOR UPDATE SKIP LOCKED
) DELETE FROM hookbox_event_ids i USING x WHERE i.source = x.source AND i.id = x.id`, now, limit)
	if d.committed(err) != nil {
		return 0, fmt.Errorf("forget expired ids: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// DeleteEventsBefore deletes at most limit of the oldest events received
// before t whose deliveries are all delivered, with those deliveries, their
// attempts and the records of what debouncing merged (both ways). Events
// with work not yet done are kept whatever their age: a pending (due,
// retrying) or dead delivery, or a debounced or rate-limited delivery
// waiting to send them (hookbox_debounce_event).
//
// It locks the events first and checks their deliveries and pending
// deliveries again in a statement of its own (a fresh snapshot): a
// delivery replayed, or a debounced one fired, while the sweep runs locks
// its event too (FOR KEY SHARE), so either it waits and finds the event
// gone (a replay says not found), or the sweep passes the event over or
// sees the delivery pending. A pending debounced delivery keeps pointing
// at its event until the fire that opens its deliveries, so the recheck
// sees one or the other. No delivery is left without its event, and none
// is lost.
func (d *DB) DeleteEventsBefore(ctx context.Context, t time.Time, limit int) (int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var n int
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT seq FROM hookbox_events e WHERE received_at < $1
	AND NOT EXISTS (SELECT 1 FROM hookbox_deliveries d WHERE d.event_seq = e.seq AND d.state <> 2)
	AND NOT EXISTS (SELECT 1 FROM hookbox_debounce k WHERE k.event_seq = e.seq)
	ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED`, t, limit)
		if err != nil {
			return err
		}
		seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil || len(seqs) == 0 {
			return err
		}
		// (OFFSET 0 keeps the check a probe of hookbox_deliveries_event per
		// event, at most limit of them, rather than a join with every
		// undelivered delivery.)
		return tx.QueryRow(ctx, `WITH v AS MATERIALIZED (
	SELECT ARRAY(SELECT seq FROM hookbox_events e WHERE seq = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM hookbox_deliveries d WHERE d.event_seq = e.seq AND d.state <> 2 OFFSET 0)
		AND NOT EXISTS (SELECT 1 FROM hookbox_debounce k WHERE k.event_seq = e.seq OFFSET 0)) AS a
), dd AS (
	DELETE FROM hookbox_deliveries d WHERE d.event_seq = ANY((SELECT a FROM v)::bigint[]) RETURNING d.id
), da AS (
	DELETE FROM hookbox_attempts a WHERE a.delivery_id = ANY(ARRAY(SELECT id FROM dd))
), dmf AS (
	DELETE FROM hookbox_merged WHERE fired_seq = ANY((SELECT a FROM v)::bigint[])
), dmm AS (
	DELETE FROM hookbox_merged WHERE merged_seq = ANY((SELECT a FROM v)::bigint[])
), de AS (
	DELETE FROM hookbox_events e WHERE e.seq = ANY((SELECT a FROM v)::bigint[]) RETURNING 1
) SELECT count(*) FROM de`, seqs).Scan(&n)
	})
	if d.committed(err) != nil {
		return 0, fmt.Errorf("delete old events: %w", err)
	}
	return n, nil
}

// encodeHeaders lays out an event's headers as the count, then each name
// and value with its length, all lengths as uvarints: byte-exact, whatever
// bytes a sender put in them.
func encodeHeaders(h []app.HeaderField) []byte {
	n := binary.MaxVarintLen64
	for _, f := range h {
		n += 2*binary.MaxVarintLen64 + len(f.Name) + len(f.Value)
	}
	b := binary.AppendUvarint(make([]byte, 0, n), uint64(len(h)))
	for _, f := range h {
		b = binary.AppendUvarint(b, uint64(len(f.Name)))
		b = append(b, f.Name...)
		b = binary.AppendUvarint(b, uint64(len(f.Value)))
		b = append(b, f.Value...)
	}
	return b
}

// errCorrupt is returned for stored headers that cannot be decoded.
var errCorrupt = errors.New("corrupt headers record")

// decodeHeaders decodes what encodeHeaders made.
func decodeHeaders(b []byte) ([]app.HeaderField, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, errCorrupt
	}
	b = b[k:]
	next := func() (string, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(l)])
		b = b[k+int(l):]
		return s, true
	}
	var out []app.HeaderField
	for range n {
		name, ok1 := next()
		value, ok2 := next()
		if !ok1 || !ok2 {
			return nil, errCorrupt
		}
		out = append(out, app.HeaderField{Name: name, Value: value})
	}
	if len(b) != 0 {
		return nil, errCorrupt
	}
	return out, nil
}
