package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
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
