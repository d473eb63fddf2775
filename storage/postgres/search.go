// Body search (issue 29): events whose body contains a text, ASCII letters
// in either case, over the whole retention, served by a trigram index
// (pg_trgm) when the database allows the extension.

package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"hookbox/app"
)

// searchIndex is the trigram index of the bodies. It indexes searchText:
// encode(body, 'escape') is a text whatever the body's bytes (zero bytes
// and bytes from 0x80 are written \ooo, a backslash \\), so a body that is
// not UTF-8 is indexed and searched like any other; lower() under the C
// collation lowers its ASCII letters alone, so a case-sensitive LIKE of a
// lowered pattern is the ASCII-case-insensitive search, and rechecks each
// row the index proposes in about half the time ILIKE takes.
const searchIndex = "hookbox_events_body_trgm"

// searchText is the indexed expression for the body of the row alias
// ("": the table's own, in the index's definition).
func searchText(alias string) string {
	if alias != "" {
		alias += "."
	}
	return `lower(encode(` + alias + `body, 'escape') COLLATE "C")`
}

// searchSQL keeps the rows of hookbox_events (as alias) whose body
// contains the text of searchArgs' two arguments, numbered a and b: the
// LIKE is what the trigram index serves; the position() over the body
// with its ASCII letters lowered is exact, and drops a match the escaping
// alone made (a search for 303 inside the \303 of an é). It costs more,
// so PostgreSQL runs it after the LIKE, on the few rows that pass.
func searchSQL(alias string, a, b int) string {
	t := searchText(alias)
	return fmt.Sprintf(`(%s LIKE $%d AND position($%d::bytea in decode(%s, 'escape')) > 0)`, t, a, b, t)
}

// searchArgs are the two arguments of searchSQL for the text q: the LIKE
// pattern (q with its ASCII letters lowered, escaped as encode does, then
// for LIKE) and q's bytes with their ASCII letters lowered.
func searchArgs(q string) (pattern string, lower []byte) {
	lower = app.LowerASCII([]byte(q))
	q = string(lower)
	var b strings.Builder
	b.WriteByte('%')
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == 0 || c >= 0x80:
			fmt.Fprintf(&b, `\\%03o`, c) // \ooo, its backslash escaped for LIKE
		case c == '\\':
			b.WriteString(`\\\\`) // encode's \\, each escaped for LIKE
		case c == '%' || c == '_':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('%')
	return b.String(), lower
}

// SearchEvents returns the events whose body contains q.Q (ASCII letters
// in either case) and that q's other filters select, newest first, as
// ListEvents pages them. It searches the whole retention (by the trigram
// index when there is one) within the search budget's time
// (app.DefaultSearchBudget, 1 s): each statement runs in one transaction
// under a statement_timeout of the time left, and one cut short answers
// Stopped with no rows (how far a cancelled statement looked is not
// known: SearchedUntil is never set). A ctx done cancels the statement.
func (d *DB) SearchEvents(ctx context.Context, q app.EventQuery) (app.EventSearch, error) {
	if err := app.CheckSearch(q.Q); err != nil {
		return app.EventSearch{}, err
	}
	ctx, cancel := opCtx(ctx)
	defer cancel()
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return app.EventSearch{}, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // read only: nothing to keep
	rows, next, err := listEvents(ctx, &budgetTx{tx: tx, deadline: time.Now().Add(d.searchTime())}, q)
	if errors.Is(err, errBudget) || statementTimeout(err) && ctx.Err() == nil {
		return app.EventSearch{Stopped: true}, nil
	}
	return app.EventSearch{Rows: rows, Next: next}, err
}

// SetSearchTime sets the time budget of this store's body searches (0:
// app.DefaultSearchBudget's), for tests and measurements.
func (d *DB) SetSearchTime(t time.Duration) { d.searchBudget.Store(int64(t)) }

// searchTime is the time budget of a body search.
func (d *DB) searchTime() time.Duration {
	if t := d.searchBudget.Load(); t > 0 {
		return time.Duration(t)
	}
	return app.DefaultSearchBudget.Time
}

// errBudget says a search's time was spent before its next statement.
var errBudget = errors.New("search budget spent")

// statementTimeout reports whether err is PostgreSQL's cancel of a
// statement (query_canceled: by statement_timeout, or by a cancel request
// when ctx ends; the caller tells them apart by ctx).
func statementTimeout(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "57014"
}

// budgetTx runs each statement of a search in tx under a statement_timeout
// of the time left until deadline (SET LOCAL: it ends with tx).
type budgetTx struct {
	tx       pgx.Tx
	deadline time.Time
}

// limit sets the statement_timeout of the next statement.
func (b *budgetTx) limit(ctx context.Context) error {
	left := time.Until(b.deadline).Milliseconds()
	if left <= 0 {
		return errBudget
	}
	_, err := b.tx.Exec(ctx, "SELECT set_config('statement_timeout', $1, true)", strconv.FormatInt(left, 10))
	return err
}

func (b *budgetTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := b.limit(ctx); err != nil {
		return nil, err
	}
	return b.tx.Query(ctx, sql, args...)
}

func (b *budgetTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := b.limit(ctx); err != nil {
		return errRow{err}
	}
	return b.tx.QueryRow(ctx, sql, args...)
}

// errRow is a row whose Scan fails with err.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// SearchIndexed waits for the start-up's work on the search index to end
// (see buildSearchIndex) and returns nil when the index is there and
// valid, else why it is not.
func (d *DB) SearchIndexed(ctx context.Context) error {
	select {
	case <-d.indexed:
	case <-ctx.Done():
		return ctx.Err()
	}
	return d.indexErr
}

// indexSearch builds the search index in the background, so a start on a
// large table serves at once (searches read every body meanwhile, still
// correct), and logs what became of it.
func (d *DB) indexSearch() {
	defer d.done.Done()
	defer close(d.indexed)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-d.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	start := time.Now()
	if d.opt.NoSearchIndex {
		dropped, err := d.dropSearchIndex(ctx)
		d.indexErr = err
		switch {
		case err != nil && ctx.Err() == nil:
			d.logger.Warn("body search index not dropped (storage.search_index = false): accepts pay for it until a restart drops it", "index", searchIndex, "error", err)
		case dropped:
			d.logger.Info("body search index dropped (storage.search_index = false): a body search reads every body", "index", searchIndex)
		}
		return
	}
	built, err := d.buildSearchIndex(ctx)
	d.indexErr = err
	switch {
	case err != nil && ctx.Err() != nil:
		d.indexErr = fmt.Errorf("search index: stopped by close: %w", err)
	case errors.Is(err, errNoTrigram):
		d.logger.Warn("body search runs without an index: every search reads every body; ask the database's owner to run CREATE EXTENSION pg_trgm", "error", err)
	case err != nil:
		d.logger.Warn("body search index not built: every search reads every body until a restart builds it", "index", searchIndex, "error", err)
	case built:
		d.logger.Info("body search index built", "index", searchIndex, "took", time.Since(start).Round(time.Millisecond))
	}
}

// dropSearchIndex drops the trigram index of bodies, when there is one,
// without blocking accepts (CONCURRENTLY), under the lock that builds it.
// dropped says it was there.
func (d *DB) dropSearchIndex(ctx context.Context) (dropped bool, err error) {
	err = d.withSearchLock(ctx, func(c *pgx.Conn) error {
		if err := c.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", searchIndex).Scan(&dropped); err != nil || !dropped {
			return err
		}
		_, err := c.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+searchIndex)
		return err
	})
	return dropped && err == nil, err
}

// errNoTrigram says pg_trgm is not installed and cannot be.
var errNoTrigram = errors.New("the pg_trgm extension cannot be created")

// buildSearchIndex makes sure the trigram index of bodies exists and is
// valid, creating pg_trgm first when it is missing (in the current schema,
// as CREATE EXTENSION does). It is not a migration: CREATE INDEX
// CONCURRENTLY, which lets accepts write while a large table is indexed,
// cannot run in the migration's transaction, and a database that refuses
// the extension still searches (without the index). One node of a schema
// does it at a time (a session advisory lock); an index left invalid by a
// build that was cut short is dropped and built again. built says it was
// built now.
func (d *DB) buildSearchIndex(ctx context.Context) (built bool, err error) {
	err = d.withSearchLock(ctx, func(c *pgx.Conn) error {
		built, err = buildSearchIndex(ctx, c)
		return err
	})
	return built, err
}

// withSearchLock runs f on one connection while it holds the schema's
// lock of the search index: one node of a schema builds or drops it at a
// time.
func (d *DB) withSearchLock(ctx context.Context, f func(c *pgx.Conn) error) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	c := conn.Conn()
	if _, err := c.Exec(ctx, "SELECT pg_advisory_lock($1, hashtext(current_schema()))", lockSearch); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Exec(uctx, "SELECT pg_advisory_unlock($1, hashtext(current_schema()))", lockSearch); err != nil {
			c.Close(uctx) // the session and its lock end with it; Release drops the connection
		}
	}()
	return f(c)
}

// buildSearchIndex is DB.buildSearchIndex on c, which holds the lock.
func buildSearchIndex(ctx context.Context, c *pgx.Conn) (built bool, err error) {
	schema, err := trigramSchema(ctx, c)
	if err != nil {
		return false, err
	}
	if schema == "" {
		if _, err := c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm"); err != nil {
			return false, fmt.Errorf("%w: %w", errNoTrigram, err)
		}
		if schema, err = trigramSchema(ctx, c); err != nil || schema == "" {
			return false, fmt.Errorf("%w: not found after CREATE EXTENSION (%v)", errNoTrigram, err)
		}
	}
	var valid *bool
	err = c.QueryRow(ctx, "SELECT (SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1))", searchIndex).Scan(&valid)
	if err != nil {
		return false, err
	}
	if valid != nil && *valid {
		return false, nil
	}
	if valid != nil {
		if _, err := c.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+searchIndex); err != nil {
			return false, fmt.Errorf("drop the invalid index: %w", err)
		}
	}
	_, err = c.Exec(ctx, "CREATE INDEX CONCURRENTLY IF NOT EXISTS "+searchIndex+" ON hookbox_events USING gin ("+
		searchText("")+" "+pgx.Identifier{schema, "gin_trgm_ops"}.Sanitize()+")")
	return err == nil, err
}

// trigramSchema is the schema pg_trgm is installed in, "" when it is not.
func trigramSchema(ctx context.Context, c *pgx.Conn) (string, error) {
	var schema string
	err := c.QueryRow(ctx, "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm'").Scan(&schema)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return schema, err
}
