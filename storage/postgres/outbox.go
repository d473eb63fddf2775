package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

// deliveryCols are the columns scanDelivery reads, in order.
const deliveryCols = "d.id, d.event_seq, d.destination, d.state, d.attempts, d.tries, d.due, d.created, d.updated, d.last_status, d.last_error, d.route, d.order_key"

// eventCols are the columns eventDest reads, in order.
const eventCols = "e.seq, e.source, e.id, e.topic, e.received_at, e.headers, e.body, e.origin, e.provider_at"

// eventColsOrEmpty are eventCols of an outer join: empty values where the
// event is missing.
const eventColsOrEmpty = "coalesce(e.seq, 0), coalesce(e.source, ''), coalesce(e.id, ''::bytea), coalesce(e.topic, ''::bytea), " +
	"coalesce(e.received_at, now()), coalesce(e.headers, ''::bytea), coalesce(e.body, ''::bytea), coalesce(e.origin, ''), e.provider_at"

type scanner interface{ Scan(dest ...any) error }

// deliveryDest returns the scan targets of deliveryCols for dl.
func deliveryDest(dl *app.Delivery, id, seq *int64, state *int16) []any {
	return []any{id, seq, &dl.Destination, state, &dl.Attempts, &dl.Tries, &dl.Due, &dl.Created, &dl.Updated, &dl.LastStatus, &dl.LastError, &dl.Route, &dl.OrderKey}
}

func scanDelivery(r scanner) (*app.Delivery, error) {
	dl := &app.Delivery{}
	var id, seq int64
	var state int16
	if err := r.Scan(deliveryDest(dl, &id, &seq, &state)...); err != nil {
		return nil, err
	}
	dl.ID, dl.EventSeq, dl.State = uint64(id), uint64(seq), app.DeliveryState(state)
	return dl, nil
}

// eventDest returns the scan targets of eventCols; finish completes e.
func eventDest(e *app.Event) (dest []any, finish func() error) {
	var seq int64
	var id, topic, headers []byte
	var providerAt *time.Time
	return []any{&seq, &e.Source, &id, &topic, &e.ReceivedAt, &headers, &e.Body, &e.Origin, &providerAt}, func() error {
		e.Seq, e.ID, e.Topic = uint64(seq), string(id), string(topic)
		if providerAt != nil {
			e.ProviderAt = *providerAt
		}
		if e.Body == nil {
			e.Body = []byte{}
		}
		h, err := decodeHeaders(headers)
		e.Header = h
		return err
	}
}

// headOnly is the claim's condition on a pending delivery d of an order
// group: no pending delivery of its group (destination, route, order
// key) has a lower id, whether due later, retrying or leased by any node.
// It probes hookbox_deliveries_order once per candidate. Two nodes that
// claim at once cannot both lease a head and the one after it: the one
// after stays held while the head is pending, and a delivery becomes the
// head only once the head's record is committed.
const headOnly = `(d.order_key = '' OR NOT EXISTS (SELECT 1 FROM hookbox_deliveries e WHERE e.destination = d.destination
	AND e.route = d.route AND e.order_key = d.order_key AND e.state = 1 AND e.id < d.id))`

// claimSQL returns the statement that leases up to $3 deliveries to $1
// that which (a condition on the outbox's columns, using $2 and $6 on) picks,
// in run_at order (FOR UPDATE SKIP LOCKED: rows another node is taking are
// passed over), heads of their order groups only (headOnly), moving their
// run_at to the lease's end $4 and naming this node $5. It returns them
// with their events (gone is true when the event is missing) and the
// run_at each had, and one row (id -1) whose run_at is the earliest of the
// pending deliveries it did not take that are heads (NULL when none): a
// held delivery's due time would only wake the dispatcher for nothing, its
// head's run_at is in the row already.
func claimSQL(which string) string {
	return `
WITH c AS MATERIALIZED (
	SELECT id, run_at AS was FROM hookbox_deliveries d WHERE destination = $1 AND state = 1 AND ` + which + ` AND ` + headOnly + `
	ORDER BY run_at, id LIMIT $3 FOR UPDATE SKIP LOCKED
), u AS (
	UPDATE hookbox_deliveries d SET run_at = $4, leased_by = $5 FROM c WHERE d.id = c.id
	RETURNING c.was, ` + deliveryCols + `
)
SELECT u.*, e.seq IS NULL, ` + eventColsOrEmpty + ` FROM u LEFT JOIN hookbox_events e ON e.seq = u.event_seq
UNION ALL
SELECT (SELECT run_at FROM hookbox_deliveries d WHERE destination = $1 AND state = 1 AND NOT (id = ANY(ARRAY(SELECT id FROM c))) AND ` + headOnly + `
	ORDER BY run_at, id LIMIT 1), -1, 0, '', 0, 0, 0, now(), now(), now(), 0, '', '', '', true, 0, '', ''::bytea, ''::bytea, now(), ''::bytea, ''::bytea, '', NULL::timestamptz`
}

// The outbox reads: what is due by $2 (a due time, or the end of a lease
// that a node which died never gave back), and the waiting deliveries
// after the position ($2, $6) that no node holds.
var (
	claimDueSQL     = claimSQL("run_at <= $2")
	claimWaitingSQL = claimSQL("leased_by IS NULL AND (run_at, id) > ($2, $6)")
)

// DueDeliveries leases up to limit deliveries to dest due at or before
// now, oldest first, with their events, skipping those for which skip is
// true (in flight). A leased delivery is this node's until now + Lease or
// until its attempt is recorded: no other node gets it meanwhile (FOR
// UPDATE SKIP LOCKED, then run_at moved to the lease's end), and if this
// node dies it is due again when the lease ends. next is the earliest
// run_at of the pending deliveries not returned (a due time, or the end
// of another node's lease), zero when there is none. A delivery that
// cannot be sent (its event is gone, or its headers cannot be decoded) is
// dead-lettered with the reason, never returned as an error that would
// hold back the rest (see setAside).
//
// The lease is one round trip (BEGIN, the claim and COMMIT pipelined) and
// is committed without waiting for its flush (synchronous_commit off for
// this transaction only): a lease lost to a crash of the server only makes
// the delivery due again at once. Every write that backs an answer or an
// attempt's record waits for the flush.
func (d *DB) DueDeliveries(ctx context.Context, dest string, now time.Time, limit int, skip func(uint64) bool) (work []app.Work, next time.Time, err error) {
	return d.claim(ctx, claimDueSQL, dest, now, now, limit, skip)
}

// WaitingDeliveries leases up to limit pending deliveries to dest that no
// node holds, due or not, after the delivery (afterDue, afterID) in due
// order, with their events, skipping those for which skip is true: the
// retries of a destination that answers again, taken early. They are
// leased as DueDeliveries leases, so that no other node takes them early
// too; a delivery that cannot be sent is set aside as there.
func (d *DB) WaitingDeliveries(ctx context.Context, dest string, afterDue time.Time, afterID uint64, limit int, skip func(uint64) bool) ([]app.Work, error) {
	// A position past every id (the dispatcher's "after whatever is due
	// at afterDue") still compares as a bigint.
	id := int64(min(afterID, math.MaxInt64))
	work, _, err := d.claim(ctx, claimWaitingSQL, dest, afterDue, time.Now(), limit, skip, id)
	return work, err
}

// claim runs a claim statement (claimSQL) for dest with $2 = at and more
// from $6 on, leasing until now + Lease; see DueDeliveries.
func (d *DB) claim(ctx context.Context, sql, dest string, at, now time.Time, limit int, skip func(uint64) bool, more ...any) (work []app.Work, next time.Time, err error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var passed []int64
	var bad []unsendable
	var due []time.Time // work[i] was due at due[i]
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SET LOCAL synchronous_commit = off")
	b.Queue(sql, append([]any{dest, at, limit, now.Add(d.opt.Lease), d.node}, more...)...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			dl, e := &app.Delivery{}, &app.Event{}
			var id, seq int64
			var state int16
			var was *time.Time
			var gone bool
			edest, finish := eventDest(e)
			if err := rows.Scan(append(append(append([]any{&was}, deliveryDest(dl, &id, &seq, &state)...), &gone), edest...)...); err != nil {
				return err
			}
			if id < 0 { // the last row: what is left
				if was != nil {
					next = *was
				}
				continue
			}
			dl.ID, dl.EventSeq, dl.State = uint64(id), uint64(seq), app.DeliveryState(state)
			if skip(dl.ID) {
				passed = append(passed, id)
				continue
			}
			if gone {
				bad = append(bad, unsendable{dl: dl, reason: fmt.Sprintf("event %d is gone: nothing to send", dl.EventSeq)})
				continue
			}
			if err := finish(); err != nil {
				bad = append(bad, unsendable{dl: dl, poison: err.Error(),
					reason: fmt.Sprintf("event %d cannot be read (%v): set aside, see the overview", dl.EventSeq, err)})
				continue
			}
			work = append(work, app.Work{Delivery: dl, Event: e})
			due = append(due, *was)
		}
		return rows.Err()
	})
	b.Queue("COMMIT")
	if err := d.committed(d.pool.SendBatch(ctx, b).Close()); err != nil {
		return nil, time.Time{}, fmt.Errorf("read the outbox of %s: %w", dest, err)
	}
	// Oldest first, as they were due (RETURNING keeps no order).
	sort.Sort(byDue{work, due})
	if len(passed) > 0 {
		// Not this pass's (the dispatcher has them in hand): give them back.
		_, err := d.pool.Exec(ctx, "UPDATE hookbox_deliveries SET run_at = due, leased_by = NULL WHERE id = ANY($1) AND leased_by = $2", passed, d.node)
		if d.committed(err) != nil {
			return nil, time.Time{}, fmt.Errorf("read the outbox of %s: %w", dest, err)
		}
	}
	if len(bad) > 0 {
		// Best effort: what is not set aside now is leased again, and set
		// aside, when its lease ends.
		if err := d.setAside(ctx, bad, now); err != nil {
			d.logger.Warn("set aside deliveries that cannot be sent", "destination", dest, slog.Any("error", err))
		}
	}
	return work, next, nil
}

// unsendable is a leased delivery that cannot be sent, and why.
type unsendable struct {
	dl     *app.Delivery
	poison string // why its event cannot be decoded ("": it is gone)
	reason string // its last error
}

// setAsideSQL dead-letters the deliveries this node ($3) leased and could
// not send, each with its reason, at $2, and lists on hookbox_poison the
// events of those whose event cannot be decoded.
const setAsideSQL = `
WITH r AS (
	SELECT * FROM unnest($1::bigint[], $4::bigint[], $5::text[], $6::text[], $7::text[]) AS r(id, seq, dest, reason, poison)
), u AS (
	UPDATE hookbox_deliveries d SET state = 3, run_at = NULL, leased_by = NULL, updated = $2, last_status = 0, last_error = r.reason
	FROM r WHERE d.id = r.id AND d.state = 1 AND d.leased_by = $3
	RETURNING d.id
)
INSERT INTO hookbox_poison (at, kind, key, reason, delivery, destination)
SELECT $2, 'event', r.seq::text, r.poison, r.id, r.dest FROM r JOIN u USING (id) WHERE r.poison <> ''`

// setAside dead-letters the leased deliveries bad, which cannot be sent,
// in one statement: the rest of their destination's outbox flows on.
func (d *DB) setAside(ctx context.Context, bad []unsendable, now time.Time) error {
	var ids, seqs []int64
	var dests, reasons, poisons []string
	for _, u := range bad {
		ids = append(ids, int64(u.dl.ID))
		seqs = append(seqs, int64(u.dl.EventSeq))
		dests = append(dests, u.dl.Destination)
		reasons = append(reasons, pgText(u.reason))
		poisons = append(poisons, pgText(u.poison))
	}
	_, err := d.pool.Exec(ctx, setAsideSQL, ids, now, d.node, seqs, dests, reasons, poisons)
	return d.committed(err)
}

// maxPoisonCounted bounds the count of records set aside, so that
// counting them reads the primary key (an index-only scan), as every read
// of the pages does; a database with more has far worse troubles.
const maxPoisonCounted = 100_000

// Poisoned returns up to limit of the records set aside, newest first,
// and how many there are in the cluster (counting at most
// maxPoisonCounted).
func (d *DB) Poisoned(ctx context.Context, limit int) ([]app.Poison, int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var total int
	err := d.pool.QueryRow(ctx, "SELECT count(*) FROM (SELECT id FROM hookbox_poison ORDER BY id DESC LIMIT $1) p", maxPoisonCounted).Scan(&total)
	if err != nil || limit <= 0 {
		return nil, total, err
	}
	rows, err := d.pool.Query(ctx, "SELECT id, at, kind, key, reason, delivery, destination FROM hookbox_poison ORDER BY id DESC LIMIT $1", limit)
	if err != nil {
		return nil, 0, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (app.Poison, error) {
		var p app.Poison
		var id, dl int64
		err := r.Scan(&id, &p.At, &p.Kind, &p.Key, &p.Reason, &dl, &p.Destination)
		p.ID, p.Delivery = uint64(id), uint64(dl)
		return p, err
	})
	return out, total, err
}

// pgText makes s fit a text column: PostgreSQL's text holds valid UTF-8
// without NUL, and an error text may quote whatever bytes a destination
// answered. What does not fit becomes U+FFFD; the rest is kept.
func pgText(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// byDue sorts work by due time, then delivery id.
type byDue struct {
	work []app.Work
	due  []time.Time
}

func (b byDue) Len() int { return len(b.work) }
func (b byDue) Less(i, j int) bool {
	if !b.due[i].Equal(b.due[j]) {
		return b.due[i].Before(b.due[j])
	}
	return b.work[i].Delivery.ID < b.work[j].Delivery.ID
}
func (b byDue) Swap(i, j int) {
	b.work[i], b.work[j] = b.work[j], b.work[i]
	b.due[i], b.due[j] = b.due[j], b.due[i]
}

// Delivery returns delivery id and its attempts, oldest first.
func (d *DB) Delivery(ctx context.Context, id uint64) (*app.Delivery, []*app.Attempt, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	dl, err := scanDelivery(d.pool.QueryRow(ctx, "SELECT "+deliveryCols+" FROM hookbox_deliveries d WHERE d.id = $1", int64(id)))
	if err != nil {
		return nil, nil, appErr(err)
	}
	rows, err := d.pool.Query(ctx, "SELECT n, started, duration_ns, status, error, response, probe FROM hookbox_attempts WHERE delivery_id = $1 ORDER BY n", int64(id))
	if err != nil {
		return nil, nil, err
	}
	attempts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*app.Attempt, error) {
		a := &app.Attempt{}
		var dur int64
		err := r.Scan(&a.N, &a.Start, &dur, &a.Status, &a.Error, &a.Response, &a.Probe)
		a.Duration = time.Duration(dur)
		return a, err
	})
	return dl, attempts, err
}

// deliveries runs a query of deliveryCols.
func (d *DB) deliveries(ctx context.Context, sql string, args ...any) ([]*app.Delivery, error) {
	rows, err := d.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*app.Delivery, error) { return scanDelivery(r) })
}

// PreviousInGroup returns the delivery before dl in its order group (same
// destination, route and order key; the highest lower id), nil when dl
// has no order key or is the group's first: one probe of
// hookbox_deliveries_group.
func (d *DB) PreviousInGroup(ctx context.Context, dl *app.Delivery) (*app.Delivery, error) {
	if dl.OrderKey == "" {
		return nil, nil
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	ds, err := d.deliveries(ctx, "SELECT "+deliveryCols+` FROM hookbox_deliveries d
		WHERE d.destination = $1 AND d.route = $2 AND d.order_key = $3 AND d.order_key <> '' AND d.id < $4
		ORDER BY d.id DESC LIMIT 1`, dl.Destination, dl.Route, dl.OrderKey, int64(dl.ID))
	if err != nil || len(ds) == 0 {
		return nil, err
	}
	return ds[0], nil
}

// EventDeliveries returns the deliveries of event seq.
func (d *DB) EventDeliveries(ctx context.Context, seq uint64) ([]*app.Delivery, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	return d.deliveries(ctx, "SELECT "+deliveryCols+" FROM hookbox_deliveries d WHERE d.event_seq = $1 ORDER BY d.id", int64(seq))
}

// DeadLetters returns up to limit dead deliveries with ids above after,
// in id order, and the total number of dead deliveries.
func (d *DB) DeadLetters(ctx context.Context, after uint64, limit int) ([]*app.Delivery, int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	out, err := d.deliveries(ctx, "SELECT "+deliveryCols+" FROM hookbox_deliveries d WHERE d.state = 3 AND d.id > $1 ORDER BY d.id LIMIT $2", int64(after), limit)
	if err != nil {
		return nil, 0, err
	}
	total, err := d.CountDead(ctx)
	return out, total, err
}

// CountDead returns the number of dead deliveries in the cluster.
func (d *DB) CountDead(ctx context.Context) (int, error) {
	return d.count(ctx, "SELECT count(*) FROM hookbox_deliveries WHERE state = 3")
}

// CountPending returns the number of pending deliveries in the cluster,
// debounced ones included.
func (d *DB) CountPending(ctx context.Context) (int, error) {
	return d.count(ctx, "SELECT (SELECT count(*) FROM hookbox_deliveries WHERE state = 1) + (SELECT count(*) FROM hookbox_debounce WHERE due IS NOT NULL)")
}

// CountRetrying returns how many deliveries are failing (failingSQL:
// pending after an attempt, waiting for a retry), counting at most limit.
func (d *DB) CountRetrying(ctx context.Context, limit int) (int, error) {
	return d.count(ctx, "SELECT count(*) FROM (SELECT 1 FROM hookbox_deliveries WHERE "+failingSQL+" LIMIT $1) b", limit)
}

// Backlog returns how many deliveries to dest are pending, counting at
// most limit.
func (d *DB) Backlog(ctx context.Context, dest string, limit int) (int, error) {
	return d.count(ctx, "SELECT count(*) FROM (SELECT 1 FROM hookbox_deliveries WHERE destination = $1 AND state = 1 LIMIT $2) b", dest, limit)
}
