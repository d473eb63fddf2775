// Package postgres is hookbox's store on PostgreSQL, for several hookbox
// nodes behind a load balancer sharing one database. It keeps the promise
// of the bbolt store (bboltstore.DB) and passes the same conformance suite
// (storage/storetest): an id is accepted once per source, by a unique key
// checked in the same transaction that stores the event and its
// deliveries; an answer is given only after the commit is flushed
// (synchronous_commit); deliveries are leased in the database, so a node
// that dies mid-send hands them to the others when the lease ends.
package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"hookbox/app"
	"hookbox/storage"
)

// ErrClosed is returned by writes after Close.
var ErrClosed = storage.ErrClosed

// Defaults of Options.
const (
	DefaultLease    = time.Minute
	DefaultPoll     = 5 * time.Second
	DefaultMaxConns = 16
	// defaultCommitters is how many group commits may be in flight at once
	// (see committer).
	defaultCommitters = 2
)

// testTracer, set by tests, sees every query the store sends.
var testTracer pgx.QueryTracer

// opTimeout bounds one store operation that has no context of its own, so
// that a database that stopped answering fails a request instead of
// holding it forever.
const opTimeout = 30 * time.Second

// Options tune a DB; the zero value gives the defaults.
type Options struct {
	// Lease is how long a delivery handed out by DueDeliveries stays
	// this node's: if the node dies before recording its attempt, another
	// node sends it once the lease has ended. It must outlast the longest
	// send (a destination's timeout) and its recording.
	Lease time.Duration
	// Poll is how often the node looks at the outbox without being told
	// (a safety net: other nodes announce new work with NOTIFY).
	Poll time.Duration
	// NoSearchIndex drops the trigram index of the bodies (or builds
	// none): accepts go faster, and a body search reads every body.
	NoSearchIndex bool
	// Node names this process in leases (default: host, pid and a random part).
	Node string
	// Committers is how many group commits of accepts may run at once.
	Committers int
	// MaxGroup bounds the accepts one commit carries (default 1024; 1
	// gives every accept a transaction of its own).
	MaxGroup int
	// Logger defaults to slog.Default with component=postgres.
	Logger *slog.Logger
}

// DB is the PostgreSQL implementation of app.Store.
type DB struct {
	pool    *pgxpool.Pool
	connCfg *pgx.ConnConfig // for the listener's own connection
	opt     Options
	node    string
	channel string // NOTIFY channel of this schema
	logger  *slog.Logger
	where   string // the URL without its password, for messages

	queue    chan *acceptWrite // accepts waiting for a committer
	mu       sync.RWMutex      // guards closed
	closed   bool
	inflight sync.WaitGroup // writes between their check of closed and their answer
	stop     chan struct{}  // closed by Close: committers and listener return
	done     sync.WaitGroup // committers and listener

	onOpened atomic.Pointer[func()]
	onCommit atomic.Pointer[func(error)] // see OnCommit
	deaf     atomic.Bool                 // tests: notifications are not heard (the poll alone wakes)
	leader   atomic.Bool
	commits  atomic.Uint64
	writes   atomic.Uint64
	counts   counts // what AddCounts took (counts.go)

	indexed  chan struct{} // closed when the start-up's work on the search index ends
	indexErr error         // why the search index is not there (read after indexed)

	searchBudget atomic.Int64 // see SetSearchTime; 0: app.DefaultSearchBudget's time
}

var _ app.Store = (*DB)(nil)

// Open connects to the database at rawURL, checks that it keeps commits
// durable, creates or migrates hookbox's schema, and starts the group
// committers and the listener that hears other nodes' new work. The URL is
// a secret: errors and logs show it with its password masked.
func Open(ctx context.Context, rawURL string, opt Options) (*DB, error) {
	where := MaskURL(rawURL)
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("database URL %s: %w", where, errors.New(maskErr(err.Error(), rawURL)))
	}
	if u, err := url.Parse(rawURL); err == nil && u.Query().Get("pool_max_conns") == "" {
		cfg.MaxConns = DefaultMaxConns
	}
	if opt.Lease <= 0 {
		opt.Lease = DefaultLease
	}
	if opt.Poll <= 0 {
		opt.Poll = DefaultPoll
	}
	if opt.Committers <= 0 {
		opt.Committers = defaultCommitters
	}
	if opt.MaxGroup <= 0 {
		opt.MaxGroup = maxGroup
	}
	if opt.Logger == nil {
		opt.Logger = slog.With("component", "postgres")
	}
	if opt.Node == "" {
		opt.Node = nodeName()
	}
	cfg.ConnConfig.Tracer = testTracer
	var warnOnce sync.Once
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		return durableCommits(ctx, c, func() {
			warnOnce.Do(func() {
				opt.Logger.Warn("synchronous_commit is off for hookbox's database user; hookbox turns it on for its own sessions (an answer waits for the commit's flush)")
			})
		})
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", where, err)
	}
	d := &DB{
		pool:    pool,
		connCfg: cfg.ConnConfig.Copy(),
		opt:     opt,
		node:    opt.Node,
		logger:  opt.Logger,
		where:   where,
		queue:   make(chan *acceptWrite, maxGroup),
		stop:    make(chan struct{}),
		indexed: make(chan struct{}),
	}
	d.counts.shards = make(chan int32, 64)
	if err := d.init(ctx); err != nil {
		pool.Close()
		return nil, err
	}
	for range opt.Committers {
		d.done.Add(1)
		go d.committer()
	}
	d.done.Add(3)
	go d.listen()
	go d.flusher()
	go d.indexSearch()
	return d, nil
}

// init checks the server and brings the schema up to date.
func (d *DB) init(ctx context.Context) error {
	var version int
	var fsync, schema string
	err := d.pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int, current_setting('fsync'), current_schema()").Scan(&version, &fsync, &schema)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", d.where, err)
	}
	if version < 120000 {
		return fmt.Errorf("%s runs PostgreSQL %d.%d; hookbox needs 12 or newer", d.where, version/10000, version%10000)
	}
	if fsync != "on" {
		return fmt.Errorf("%s runs with fsync = %s: a crash of the server could lose acknowledged events, so hookbox refuses it (set fsync = on)", d.where, fsync)
	}
	from, to, err := migrate(ctx, d.pool)
	if err != nil {
		return fmt.Errorf("%s: %w", d.where, err)
	}
	if from != to {
		d.logger.Info("database schema migrated", "from", from, "to", to, "schema", schema)
	}
	// One channel per schema (two clusters in one database do not wake
	// each other), named by a hash: a channel name has at most 63 bytes.
	sum := sha256.Sum256([]byte(schema))
	d.channel = "hookbox_work_" + hex.EncodeToString(sum[:8])
	return nil
}

// durableCommits makes sure a session commits durably: synchronous_commit
// off would let a commit return before its WAL is flushed, and hookbox
// answers 2xx on the commit's return. A setting of on, local, remote_write
// or remote_apply is kept as the DBA chose it; off is turned on for this
// session, and warn is told.
func durableCommits(ctx context.Context, c *pgx.Conn, warn func()) error {
	var sc string
	if err := c.QueryRow(ctx, "SELECT current_setting('synchronous_commit')").Scan(&sc); err != nil {
		return err
	}
	if sc != "off" {
		return nil
	}
	warn()
	_, err := c.Exec(ctx, "SET synchronous_commit = on")
	return err
}

// nodeName names this process: host, pid and a random part (a restarted
// node is a new node; its old leases simply end).
func nodeName() string {
	host, _ := os.Hostname()
	var b [3]byte
	rand.Read(b[:])
	return host + "-" + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(b[:])
}

// Node returns the name this node leases deliveries under.
func (d *DB) Node() string { return d.node }

// Where returns the database's URL with the password masked, for logs.
func (d *DB) Where() string { return d.where }

// Lease returns how long a delivery handed out stays this node's.
func (d *DB) Lease() time.Duration { return d.opt.Lease }

// OnCommit sets f to be told the outcome of every write this node commits
// (accepts, leases, attempts, replays, fires, sweeps, settings): nil, or
// the error that failed it: a database that cannot be reached, refuses
// writes (read-only after a fail-over, a full disk, a revoked grant) or
// stops answering within opTimeout. hookbox follows its storage's health
// with it, as on bbolt (app.StorageHealth). A failure of one write's own
// data, which fails that write alone, says nothing of the database and is
// not told. f must not block.
func (d *DB) OnCommit(f func(err error)) { d.onCommit.Store(&f) }

// committed tells OnCommit's function of a write's outcome, and returns err.
func (d *DB) committed(err error) error {
	if f := d.onCommit.Load(); f != nil && !writesOwnFault(err) {
		(*f)(err)
	}
	return err
}

// writesOwnFault reports whether err fails a write for what it carries,
// not for the database's state: a value the column or index cannot take
// (data exceptions, class 22; program limits such as an index row too
// large, class 54; constraints, class 23); or ErrClosed.
func writesOwnFault(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code[:2] {
		case "22", "23", "54":
			return true
		}
	}
	return errors.Is(err, ErrClosed)
}

// Ping reports whether the database answers; it backs /healthz.
func (d *DB) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return d.pool.Ping(ctx)
}

// CommitCounts reports the group commits of accepts since Open and the
// writes they carried (their ratio is the group size); pages is 0 (it is
// bbolt's figure).
func (d *DB) CommitCounts() (commits, writes, pages uint64) {
	return d.commits.Load(), d.writes.Load(), 0
}

// Close lets accepts in flight commit, refuses new writes with ErrClosed,
// gives back the leases of deliveries this node took but did not record
// (a send cut by shutdown: another node, or this one after a restart, sends
// it at once rather than after the lease), and closes the connections.
func (d *DB) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.inflight.Wait()
	close(d.stop)
	d.done.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.flushCounts(ctx); err != nil {
		d.logger.Warn("write the hourly counts at close: the ones since the last write are lost", "error", err)
	}
	tag, err := d.pool.Exec(ctx, "UPDATE hookbox_deliveries SET run_at = due, leased_by = NULL WHERE leased_by = $1 AND state = 1", d.node)
	if err == nil && tag.RowsAffected() > 0 {
		d.notify(ctx)
	}
	d.pool.Close()
	if err != nil {
		return fmt.Errorf("give back this node's leases: %w", err)
	}
	return nil
}

// begin marks a write in flight, or returns ErrClosed.
func (d *DB) begin() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.closed {
		return ErrClosed
	}
	d.inflight.Add(1)
	return nil
}

// opCtx bounds an operation by opTimeout within its caller's ctx: the
// caller's cancellation reaches every pgx call, and a caller without a
// deadline still never waits on a stalled server for ever.
func opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, opTimeout)
}

// appErr maps pgx's no-rows to app.ErrNotFound.
func appErr(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return app.ErrNotFound
	}
	return err
}
