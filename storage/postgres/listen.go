package postgres

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

// OnOpened sets f to be called once per commit of this node that opened
// deliveries or debounce steps, and whenever another node announces new
// work (NOTIFY) or the poll interval passes: hookbox wakes its dispatcher
// with it. f must not block.
func (d *DB) OnOpened(f func()) { d.onOpened.Store(&f) }

func (d *DB) wake() {
	if f := d.onOpened.Load(); f != nil {
		(*f)()
	}
}

// Leader reports whether this node holds the cluster's job lock: the node
// that holds it runs the once-per-cluster jobs (sweep, alerts). When it
// dies, its connection ends, and another node takes the lock within the
// poll interval.
func (d *DB) Leader() bool { return d.leader.Load() }

// notify tells the other nodes that new work may be due.
func (d *DB) notify(ctx context.Context) {
	if _, err := d.pool.Exec(ctx, "SELECT pg_notify($1, $2)", d.channel, d.node); err != nil {
		d.logger.Warn("notify other nodes", slog.Any("error", err))
	}
}

// listen holds a connection of its own that LISTENs for other nodes' new
// work and wakes the dispatcher on each notification, and at least every
// Poll; on the same connection it tries for the cluster's job lock. A lost
// connection drops the lock and is made again.
func (d *DB) listen() {
	defer d.done.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-d.stop
		cancel()
	}()
	reconnect := app.Backoff{First: 100 * time.Millisecond, Max: d.opt.Poll}
	backoff := reconnect.First
	for ctx.Err() == nil {
		err := d.listenOn(ctx)
		d.leader.Store(false)
		if ctx.Err() != nil {
			return
		}
		d.logger.Warn("listener connection lost; connecting again", "in", backoff, slog.Any("error", err))
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = reconnect.Next(backoff)
		d.wake() // what was announced meanwhile went unheard
	}
}

func (d *DB) listenOn(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, d.connCfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{d.channel}.Sanitize()); err != nil {
		return err
	}
	for {
		if !d.leader.Load() {
			var got bool
			if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1, hashtext(current_schema()))", lockLeader).Scan(&got); err != nil {
				return err
			}
			if got {
				d.leader.Store(true)
				d.logger.Info("this node runs the cluster's jobs (sweep, alerts)", "node", d.node)
			}
		}
		wctx, cancel := context.WithTimeout(ctx, d.opt.Poll)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if n.Payload != d.node && !d.deaf.Load() { // our own commits woke us already
				d.wake()
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded):
			d.wake() // the poll: work whose announcement a restart missed
			if err := conn.Ping(ctx); err != nil {
				return err
			}
		default:
			return err
		}
	}
}
