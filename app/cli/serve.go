package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"hookbox/app"
	"hookbox/app/alert"
	backups "hookbox/app/backup"
	"hookbox/app/cmdsend"
	"hookbox/app/config"
	"hookbox/app/dispatch"
	"hookbox/app/httpsend"
	"hookbox/app/mail"
	"hookbox/app/metrics"
	"hookbox/app/receive"
	"hookbox/app/stream"
	"hookbox/app/sweep"
	"hookbox/app/web"
)

// shutdownGrace bounds how long in-flight requests and sends may take at
// shutdown; then the sends are cut (and go out again after the restart).
// It leaves two seconds of the ten the README promises (systemd kills at
// 20) to record the attempts that ended and close the data file. Dials in
// progress are cut at once: they have sent nothing.
const shutdownGrace = 8 * time.Second

func runServe(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	opts := configFlags(fs)
	logLevel := fs.String("log-level", "info", "debug, info, warn or error, over [log] level")
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "hookbox: -log-level: %v\n", err)
		return 2
	}
	// The log's format and level are in the config: a config that does
	// not load is told as check tells it, on stderr, one line a mistake.
	cfg, err := opts.load()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if !flagSet(fs, "log-level") {
		level = cfg.Log.Level
	}
	logger := newLogger(stderr, cfg.Log, level)
	slog.SetDefault(logger)
	if err := serveConfig(ctx, opts, cfg, logger); err != nil {
		logger.Error("hookbox stopped", slog.Any("error", err))
		return 1
	}
	return 0
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// Runtime defaults for serve, each kept when its environment variable is
// set. Measured with hookbox bench -compare on 2 cores (BENCHMARKS.md):
//   - GOMAXPROCS twice the default: a commit blocks its thread in pwrite
//     and fdatasync, and until Go hands that thread's P to another thread
//     the HTTP side runs one P short. With twice the Ps the kernel runs
//     them while the committer waits on the disk: about a quarter more
//     webhooks/s with a route, and a lower p99.
//   - GOGC=400: the live heap is tens of MB and most allocations die
//     within a request, so collecting less often saves CPU under load. The
//     soft memory limit keeps the larger target from growing the heap past
//     what a small VPS has.
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = 256 << 20
	procsPerCPU        = 2
)

var tuneOnce sync.Once

func tuneRuntime() {
	tuneOnce.Do(func() {
		if os.Getenv("GOMAXPROCS") == "" {
			runtime.GOMAXPROCS(procsPerCPU * runtime.GOMAXPROCS(0))
		}
		if os.Getenv("GOGC") == "" {
			debug.SetGCPercent(defaultGCPercent)
		}
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(defaultMemoryLimit)
		}
	})
}

// servePath is serve with the config at path and no flags, for bench: the
// config bench writes names its own port and data dir, which
// HOOKBOX_LISTEN and HOOKBOX_DATA_DIR, meant for the user's server, must
// not replace.
func servePath(ctx context.Context, path string, logger *slog.Logger) error {
	none := ""
	fileOnly := func(name string) (string, bool) {
		if name == config.EnvListen || name == config.EnvDataDir {
			return "", false
		}
		return os.LookupEnv(name)
	}
	return serve(ctx, &configOptions{path: &path, listen: &none, dataDir: &none, lookupEnv: fileOnly}, logger)
}

func serve(ctx context.Context, opts *configOptions, logger *slog.Logger) error {
	cfg, err := opts.load()
	if err != nil {
		return err
	}
	return serveConfig(ctx, opts, cfg, logger)
}

// serveConfig is serve with cfg, loaded from opts.
func serveConfig(ctx context.Context, opts *configOptions, cfg *app.Config, logger *slog.Logger) error {
	path := *opts.path
	own := logger.With("component", "serve") // serve's own lines; each part names its own component
	tuneRuntime()
	n, err := openStore(ctx, path, cfg, logger)
	if err != nil {
		return err
	}
	db := n.store
	defer db.Close()

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP from here on is a reload (reload.go), never the end of the
	// process (its default): one that comes while starting waits for the
	// reloader, one during the shutdown is dropped.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	running := app.NewRunning(cfg, time.Now())
	stats := app.NewStats(cfg, db, time.Now)
	prom := metrics.New(stats, db) // stats reports to it; /metrics serves it
	sender := httpsend.New(cfg, Version)
	commands := cmdsend.New(cfg, Version)
	dispatcher := dispatch.New(cfg, db, app.Senders{HTTP: sender, Command: commands})
	dispatcher.Stats = stats
	dispatcher.Controls = db // pauses and Retry-After holds; on PostgreSQL the rate's slots too
	dispatcher.Health = db   // failing since, next try: the same after a restart and on every node
	pauser := app.NewPauser(cfg, db, dispatcher.ControlsChanged, time.Now)
	stats.Storage.OnRecover = dispatcher.Wake // it holds its sends while commits fail
	n.describe(stats.Storage)
	db.OnCommit(stats.Storage.Committed)
	go stats.Storage.Watch(ctx, func() error {
		return db.SetMeta(context.WithoutCancel(ctx), "health_probe", []byte(time.Now().UTC().Format(time.RFC3339)))
	})
	receiver := receive.New(cfg, db)
	receiver.Stats = stats
	// The stream's hub reads new events at once after such a commit too;
	// an unrouted accept waits for its poll (app.StreamPoll).
	hub := stream.NewHub(db)
	db.OnOpened(func() { dispatcher.Wake(); hub.Wake() }) // once per commit that opened deliveries
	sweeper := sweep.New(cfg, db)
	sweeper.Stats = stats
	alerter := alert.New(cfg, db)
	alerter.Storage = stats.Storage
	alerter.Health = db
	backuper := backups.New(cfg, n.writeBackup)
	backuper.Alert = alerter.Backup
	go alerter.Run(ctx) // sends what Notify queues
	if len(cfg.Alerts.EmailTo) > 0 {
		page := "" // the status page, in every email when public_url is set
		if cfg.Server.PublicURL != "" {
			page = cfg.Server.PublicURL + "/"
		}
		mailer, err := mail.New(cfg.Alerts, page)
		if err != nil {
			return fmt.Errorf("%s: alerts: %w", path, err)
		}
		alerter.Email = mailer.Queue
		mailed := make(chan struct{})
		go func() { mailer.Run(ctx); close(mailed) }() // sends what the alerter queues, one at a time
		defer func() { stop(); <-mailed }()            // at shutdown (or a failed start): what is queued, within mail.DrainTimeout
	}
	// The destination alerts: the leader reads the stored health, and the
	// store's mark makes each go out once per cluster.
	go alerter.WatchDestinations(ctx, n.leader)
	tlsSrv, err := web.NewTLS(cfg.Server, web.TLSOptions{})
	if err != nil {
		return fmt.Errorf("%s: server: %w", path, err)
	}
	if tlsSrv != nil {
		tlsSrv.Alert = alerter.Notify
		prom.Registry.MustRegister(metrics.CertificateExpiry(tlsSrv.NotAfter))
	}

	sched := newCron(logger.With("component", "cron"))
	// SIGHUP puts the file's config in force again (reload.go): the jobs
	// whose specs are config are scheduled through it.
	reload := &reloader{opts: opts, running: running, logger: logger.With("component", "config"), now: time.Now,
		receiver: receiver, dispatcher: dispatcher, sender: sender, commands: commands, stats: stats, pauser: pauser, alerter: alerter,
		sweeper: sweeper, sched: sched}
	// Jobs run on one node of a cluster (n.onLeader): on bbolt, the only one.
	sweep := &cronJob{key: "retention.sweep", spec: func(c *app.Config) string { return c.Retention.Sweep },
		run: n.onLeader(func() { sweeper.Run(ctx) })}
	if err := reload.schedule(cfg, sweep); err != nil {
		return err
	}
	// Each node alerts of its own storage trouble; one alerts of the
	// cluster's dead letters and records set aside.
	checkAlerts := func() {
		alerter.CheckStorage(ctx)
		if n.leader() {
			alerter.CheckCluster(ctx)
		}
	}
	if err := reload.schedule(cfg, &cronJob{key: "alerts.check", spec: func(c *app.Config) string { return c.Alerts.Check }, run: checkAlerts}); err != nil {
		return err
	}
	var lastBackup func() (time.Time, int64, error)
	if cfg.Backup.Schedule != "" {
		if _, err := sched.AddFunc(cfg.Backup.Schedule, n.onLeader(func() { backuper.Run(ctx) })); err != nil {
			return fmt.Errorf("%s: backup.schedule: %w", path, err)
		}
		lastBackup = backuper.Last
	}
	sched.Start()

	// Sends go on after ctx ends, until the shutdown deadline cancels them.
	sendCtx, cancelSends := context.WithCancel(context.Background())
	defer cancelSends()
	dispatched := make(chan struct{})
	go func() { dispatcher.Run(ctx, sendCtx); close(dispatched) }()

	// The password is only read here: one is generated once every
	// listener is bound (below), so that a start that fails to bind shows
	// none, and the one shown belongs to a server that runs.
	access, err := app.NewAccess(ctx, cfg.Status, db, db, logger.With("component", "access"))
	if err != nil {
		return err
	}
	reload.access = access
	requestDir := "" // where hookbox user, token and passwd leave requests: the data dir of bbolt
	if cfg.Storage.Backend != app.BackendPostgres {
		requestDir = cfg.Server.DataDir
	}
	health := func(ctx context.Context) error { return cmp.Or(stats.Storage.Err(), db.Ping(ctx)) }
	srv := web.New(cfg, web.Deps{Receiver: receiver, Store: db, Wake: dispatcher.Wake, Health: health,
		Backup: n.backup, Access: access, Stats: stats, Metrics: prom, LastBackup: lastBackup,
		Pauser: pauser, Running: running, Stream: hub})
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (server.listen in %s, or -listen, or $%s): %w", cfg.Server.Listen, path, config.EnvListen, err)
	}
	ln = srv.Limit(ln) // under TLS, so a refused connection costs no handshake
	served := make(chan error, 2)
	attrs := []any{"version", Version, "listen", ln.Addr().String(), "tls", cfg.Server.TLS.String()}
	var httpSrv *http.Server
	if tlsSrv != nil {
		ln = tlsSrv.Listener(ln)
		if tlsSrv.HTTP != nil {
			hln, err := net.Listen("tcp", cfg.Server.HTTPListen)
			if err != nil {
				ln.Close()
				return fmt.Errorf("listen on %s (server.http_listen in %s): %w", cfg.Server.HTTPListen, path, err)
			}
			attrs = append(attrs, "http_listen", hln.Addr().String())
			httpSrv = tlsSrv.HTTPServer()
			go func() {
				if err := httpSrv.Serve(hln); !errors.Is(err, http.ErrServerClosed) {
					served <- fmt.Errorf("serve %s (server.http_listen): %w", cfg.Server.HTTPListen, err)
				}
			}()
		}
	}
	if err := access.Ensure(ctx); err != nil {
		ln.Close()
		if httpSrv != nil {
			httpSrv.Close()
		}
		return err
	}
	// Changes made elsewhere are taken up, and the command line's
	// requests applied (ones left while the server was stopped first),
	// every AccessPoll.
	go access.Watch(ctx)
	if requestDir != "" {
		go takeAccessRequests(ctx, access, requestDir)
	}
	go reload.watch(ctx, hup)
	own.Info("hookbox started", append(attrs, "data", n.where, "sources", len(cfg.Sources))...)
	go func() { served <- srv.Serve(ln) }()
	if tlsSrv != nil {
		// Gets the ACME certificate now (so that trouble shows at start),
		// then reports any trouble with the certificate, there and in the
		// log, for as long as hookbox runs.
		go tlsSrv.Watch(ctx)
	}

	select {
	case err = <-served:
		stop()
	case <-ctx.Done():
	}
	own.Info("shutting down")
	deadline := time.AfterFunc(shutdownGrace, cancelSends)
	defer deadline.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	if serr := srv.Shutdown(sctx); err == nil {
		err = serr
	}
	if httpSrv != nil {
		httpSrv.Shutdown(sctx)
	}
	cancel()
	<-dispatched
	dispatcher.Wait()     // in-flight sends finish, or are cut at the deadline and sent again after a restart
	<-sched.Stop().Done() // wait for a running sweep before closing the file
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	own.Info("hookbox stopped")
	return nil
}

// takeAccessRequests applies the command line's access requests in dir
// now and every AccessPoll until ctx ends.
func takeAccessRequests(ctx context.Context, a *app.Access, dir string) {
	t := time.NewTicker(app.AccessPoll)
	defer t.Stop()
	for {
		a.TakeAccessRequests(ctx, dir)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
