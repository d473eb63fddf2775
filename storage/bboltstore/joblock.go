package bboltstore

import (
	"context"
	"sync"
)

// jobLocks are the job locks held in this process: one process holds the
// data file, so the process's lock is the whole store's.
type jobLocks struct {
	mu   sync.Mutex
	held map[string]bool
}

// TryJobLock takes the lock named name unless it is held (app.JobLockStore).
func (d *DB) TryJobLock(ctx context.Context, name string) (func(), bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	l := &d.jobs
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[name] {
		return nil, false, nil
	}
	if l.held == nil {
		l.held = map[string]bool{}
	}
	l.held[name] = true
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			delete(l.held, name)
			l.mu.Unlock()
		})
	}, true, nil
}
