package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// TryJobLock takes the job lock named name for the cluster
// (app.JobLockStore): a session advisory lock, held on a connection of
// the pool until release, so that a node that dies gives it back with its
// session. The second key hashes the schema with the name: two clusters in
// two schemas never share a lock (two names sharing a hash only wait for
// each other).
func (d *DB) TryJobLock(ctx context.Context, name string) (func(), bool, error) {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("job lock %s: %w", name, err)
	}
	c := conn.Conn()
	var got bool
	const key = "hashtext(current_schema() || '/' || $2)"
	if err := c.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, "+key+")", lockJob, name).Scan(&got); err != nil {
		conn.Release()
		return nil, false, fmt.Errorf("job lock %s: %w", name, err)
	}
	if !got {
		conn.Release()
		return nil, false, nil
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			var freed bool
			if err := c.QueryRow(uctx, "SELECT pg_advisory_unlock($1, "+key+")", lockJob, name).Scan(&freed); err != nil || !freed {
				c.Close(uctx) // the session and its lock end with it
			}
			conn.Release()
		})
	}, true, nil
}
