package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

// SetTestTracer makes every store opened afterwards send its queries
// through t (nil: none).
func SetTestTracer(t pgx.QueryTracer) { testTracer = t }

// Setting returns a setting as one of the store's sessions has it.
func (d *DB) Setting(name string) (string, error) {
	var v string
	err := d.pool.QueryRow(context.Background(), "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

// Exec runs sql on the store's pool, for tests that arrange rows by hand.
func (d *DB) Exec(sql string, args ...any) error {
	_, err := d.pool.Exec(context.Background(), sql, args...)
	return err
}

// Deafen makes the store ignore other nodes' notifications, so that only
// its poll wakes it (to measure what a poll alone would give).
func (d *DB) Deafen() { d.deaf.Store(true) }

// Query runs sql and hands each row's first column (text) to f.
func (d *DB) Query(sql string, args []any, f func(string)) error {
	rows, err := d.pool.Query(context.Background(), sql, args...)
	if err != nil {
		return err
	}
	var line string
	_, err = pgx.ForEachRow(rows, []any{&line}, func() error { f(line); return nil })
	return err
}

// SetCountRules makes the stores opened afterwards, until t ends, count an
// accepted event and a recorded attempt by accepted and attempt instead of
// app.CountDelta's rules. Call it before Open, and close the stores
// before t ends (mustOpenURL's cleanup runs before this one's).
func SetCountRules(t testing.TB, accepted func(*app.CountDelta, *app.Event, *app.Plan),
	attempt func(*app.CountDelta, string, *app.Attempt, app.DeliveryState, time.Time)) {
	oldAccepted, oldAttempt := countAccepted, countAttempt
	countAccepted, countAttempt = accepted, attempt
	t.Cleanup(func() { countAccepted, countAttempt = oldAccepted, oldAttempt })
}
