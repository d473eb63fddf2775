package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/robfig/cron/v3"

	"hookbox/app"
	"hookbox/app/access"
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
	"hookbox/app/systemd"
	"hookbox/app/web"
)

// parts is what serve runs, wired together before anything starts; each
// long-running one becomes an app.Service in serveConfig's list.
type parts struct {
	cfg    *app.Config
	path   string
	logger *slog.Logger
	own    *slog.Logger // serve's own lines
	n      *node

	stats      *app.Stats
	dispatcher *dispatch.Dispatcher
	receiver   *receive.Receiver
	hub        *stream.Hub
	alerter    *alert.Alerter
	mailer     *mail.Mailer // nil: no email
	tls        *web.TLS     // nil: no TLS
	sched      *cron.Cron
	reload     *reloader
	acc        *access.Service
	srv        *web.Server
	notify     *systemd.Notifier // the service manager, when it listens (Type=notify)

	// served hears a server that stopped serving by itself.
	served chan error
	// What the listeners part binds and the server part serves.
	ln      net.Listener
	local   net.Listener // the local socket (localsock.go); nil: none
	httpSrv *http.Server
	serving bool
	attrs   []any
}

// wire builds serve's parts over the open store n for cfg (loaded from
// opts); ctx is serve's, which the cron jobs run under.
func wire(ctx context.Context, opts *configOptions, cfg *app.Config, n *node, notify *systemd.Notifier, logger *slog.Logger) (*parts, error) {
	p := &parts{cfg: cfg, path: *opts.path, logger: logger, own: logger.With("component", "serve"), n: n, served: make(chan error, 2),
		notify: notify}
	db := n.store
	running := app.NewRunning(cfg, time.Now())
	stats := app.NewStats(cfg, db, time.Now)
	p.stats = stats
	prom := metrics.New(stats, db) // stats reports to it; /metrics serves it
	sender := httpsend.New(cfg, Version)
	commands := cmdsend.New(cfg, Version)
	dispatcher := dispatch.New(cfg, db, app.Senders{HTTP: sender, Command: commands})
	dispatcher.Stats = stats
	dispatcher.Controls = db   // pauses and Retry-After holds
	dispatcher.Rates = n.rates // on PostgreSQL, the rate's slots for every node
	dispatcher.Health = db     // failing since, next try: the same after a restart and on every node
	p.dispatcher = dispatcher
	pauser := app.NewPauser(cfg, db, dispatcher.ControlsChanged, time.Now)
	stats.Storage.OnRecover = dispatcher.Wake // it holds its sends while commits fail
	n.describe(stats.Storage)
	db.OnCommit(stats.Storage.Committed)
	receiver := receive.New(cfg, db)
	receiver.Stats = stats
	receiver.KeepQuarantine(db) // requests refused for their signature, until a fixed secret takes them in
	p.receiver = receiver
	// The stream's hub reads new events at once after such a commit too;
	// an unrouted accept waits for its poll (app.StreamPoll).
	p.hub = stream.NewHub(db)
	db.OnOpened(func() { dispatcher.Wake(); p.hub.Wake() }) // once per commit that opened deliveries
	sweeper := sweep.New(cfg, db)
	sweeper.Stats = stats
	alerter := alert.New(cfg, db)
	alerter.Storage = stats.Storage
	alerter.Health = db
	alerter.Quiet = db // quiet_after: the sources' last events, the episodes told
	p.alerter = alerter
	backuper := backups.New(cfg, n.writeBackup)
	backuper.Alert = alerter.Backup
	if len(cfg.Alerts.EmailTo) > 0 {
		page := "" // the status page, in every email when public_url is set
		if cfg.Server.PublicURL != "" {
			page = cfg.Server.PublicURL + "/"
		}
		mailer, err := mail.New(cfg.Alerts, page)
		if err != nil {
			return nil, fmt.Errorf("%s: alerts: %w", p.path, err)
		}
		alerter.Email = mailer.Queue
		p.mailer = mailer
	}
	tlsSrv, err := web.NewTLS(cfg.Server, web.TLSOptions{})
	if err != nil {
		return nil, fmt.Errorf("%s: server: %w", p.path, err)
	}
	if tlsSrv != nil {
		tlsSrv.Alert = alerter.Notify
		prom.Registry.MustRegister(metrics.CertificateExpiry(tlsSrv.NotAfter))
		p.tls = tlsSrv
	}

	p.sched = newCron(logger.With("component", "cron"))
	// SIGHUP puts the file's config in force again (reload.go): the jobs
	// whose specs are config are scheduled through it.
	r := &reloader{opts: opts, running: running, logger: logger.With("component", "config"), now: time.Now, sched: p.sched}
	p.reload = r
	// The parts that take a new config, in order: the receiver last, so
	// that once it routes to a new destination, the dispatcher has been
	// handed its lane.
	r.appliers = app.Appliers{
		{Name: "sender", Apply: sender.Apply},
		{Name: "commands", Apply: commands.Apply}, // a changed command comes with each attempt's destination
		{Name: "stats", Apply: stats.Apply},
		{Name: "pauser", Apply: pauser.Apply},
		{Name: "alerts", Apply: alerter.Apply},
		{Name: "sweeper", Apply: sweeper.Apply},
		{Name: "scheduler", Apply: func(next *app.Config) { r.reschedule(r.running.Config(), next) }},
		{Name: "dispatcher", Apply: dispatcher.Apply},
		{Name: "receiver", Apply: receiver.Apply},
	}
	// Jobs run on one node of a cluster (n.onLeader): on bbolt, the only one.
	sweepJob := &cronJob{key: "retention.sweep", spec: func(c *app.Config) string { return c.Retention.Sweep },
		run: n.onLeader(func() { sweeper.Run(ctx); compactAfterSweep(ctx, db, logger.With("component", "sweep")) })}
	if err := p.reload.schedule(cfg, sweepJob); err != nil {
		return nil, err
	}
	// Each node alerts of its own storage trouble; one alerts of the
	// cluster's dead letters and records set aside.
	checkAlerts := func() {
		alerter.CheckStorage(ctx)
		if n.leader() {
			alerter.CheckCluster(ctx)
		}
	}
	if err := p.reload.schedule(cfg, &cronJob{key: "alerts.check", spec: func(c *app.Config) string { return c.Alerts.Check }, run: checkAlerts}); err != nil {
		return nil, err
	}
	checker, upApply, err := wireUpstream(ctx, cfg, n, receiver, alerter, prom, p.sched, logger) // upstream.go
	if err != nil {
		return nil, err
	}
	r.appliers = append(r.appliers, upApply)
	var lastBackup func() (time.Time, int64, error)
	if cfg.Backup.Schedule != "" {
		if _, err := p.sched.AddFunc(cfg.Backup.Schedule, n.onLeader(func() { backuper.Run(ctx) })); err != nil {
			return nil, fmt.Errorf("%s: backup.schedule: %w", p.path, err)
		}
		lastBackup = backuper.Last
	}

	// The password is only read here: one is generated once every
	// listener is bound (the access part), so that a start that fails to
	// bind shows none, and the one shown belongs to a server that runs.
	p.acc, err = access.New(ctx, cfg.Status, db, db, logger.With("component", "access"))
	if err != nil {
		return nil, err
	}
	p.reload.access = p.acc
	checker.Audit = p.acc.Record
	health := func(ctx context.Context) error { return cmp.Or(stats.Storage.Err(), db.Ping(ctx)) }
	p.srv = web.New(cfg, web.Deps{Receiver: receiver, Quarantine: db, Store: db, Wake: dispatcher.Wake, Health: health,
		Backup: n.backup, Access: p.acc, Stats: stats, Metrics: prom, LastBackup: lastBackup,
		Pauser: pauser, Running: running, Stream: p.hub, Reload: r.reload, Upstream: checker})
	return p, nil
}

// store is the store as a part, listed first: its committer stops, and
// the file or the pool closes, once every part that uses it stopped.
func (p *parts) store() app.Service {
	return app.ServiceFuncs{StopFunc: func(context.Context) error {
		if err := p.n.store.Close(); err != nil {
			p.own.Warn("close the store", slog.Any("error", err))
		}
		return nil
	}}
}

// storageHealth probes the store while commits fail, so that it is seen
// to work again with no traffic; under a service manager's watchdog
// (WatchdogSec=) it probes every half of it too, and each probe that came
// back is a WATCHDOG=1: a stuck committer holds the probe, the beats
// stop, and the manager restarts hookbox.
func (p *parts) storageHealth() app.Service {
	beat := p.notify.Watchdog() / 2
	alive := func() { p.notify.Notify("WATCHDOG=1") }
	return app.Loop(func(ctx context.Context) {
		p.stats.Storage.Watch(ctx, func() error {
			return p.n.store.SetMeta(context.WithoutCancel(ctx), "health_probe", []byte(time.Now().UTC().Format(time.RFC3339)))
		}, beat, alive)
	})
}

// mail sends what the alerter queues, one at a time; at the end, what is
// queued, within mail.DrainTimeout.
func (p *parts) mail() app.Service {
	if p.mailer == nil {
		return app.ServiceFuncs{}
	}
	return app.Loop(p.mailer.Run)
}

// alerts sends what Notify queues, and the destination alerts: the leader
// reads the stored health, and the store's mark makes each go out once
// per cluster.
func (p *parts) alerts() app.Service {
	return all(app.Loop(p.alerter.Run), app.Loop(func(ctx context.Context) { p.alerter.WatchDestinations(ctx, p.n.leader) }))
}

// streamHub ends every stream (the server's shutdown closes it too).
func (p *parts) streamHub() app.Service {
	return app.ServiceFuncs{StopFunc: func(context.Context) error { p.hub.Close(); return nil }}
}

// scheduler runs the cron jobs: sweeps, alert checks, backups; its stop
// waits for a running job (a sweep) before the file closes.
func (p *parts) scheduler() app.Service {
	return app.ServiceFuncs{
		StartFunc: func(context.Context) error { p.sched.Start(); return nil },
		StopFunc:  func(context.Context) error { <-p.sched.Stop().Done(); return nil },
	}
}

// dispatch runs the dispatcher. Its stop takes no more deliveries; the
// sends in flight go on until the stop's deadline, then are cut (and go
// out again after a restart).
func (p *parts) dispatch() app.Service {
	var stopRun context.CancelFunc
	sendCtx, cancelSends := context.WithCancel(context.Background())
	done := make(chan struct{})
	return app.ServiceFuncs{
		StartFunc: func(ctx context.Context) error {
			ctx, stopRun = context.WithCancel(ctx)
			go func() { p.dispatcher.Run(ctx, sendCtx); close(done) }()
			return nil
		},
		StopFunc: func(ctx context.Context) error {
			defer cancelSends()
			stopRun()
			cut := context.AfterFunc(ctx, cancelSends)
			defer cut()
			<-done
			p.dispatcher.Wait()
			return nil
		},
	}
}

// listeners binds server.listen (under TLS when set), the local socket
// and, for ACME's challenges and the redirect, server.http_listen, which
// it serves at once; first, so that a port in use stops the start before
// anything else runs. Sockets the service manager passed (hookbox.socket)
// are taken instead of binding server.listen and server.http_listen: they
// win over the config, and a disagreement is logged. The server part
// serves them and closes them at its stop (a passed socket stays open in
// the manager, which queues new connections on it until the next process
// takes it).
func (p *parts) listeners() app.Service {
	cfg := p.cfg
	return app.ServiceFuncs{
		StartFunc: func(context.Context) error {
			socks, err := systemd.Listeners()
			if err != nil {
				return err
			}
			passed := sortSockets(socks, cfg.Server, p.tls != nil && p.tls.HTTP != nil)
			for _, note := range passed.notes {
				p.own.Warn(note)
			}
			ln := passed.main
			if ln == nil {
				if ln, err = net.Listen("tcp", cfg.Server.Listen); err != nil {
					return fmt.Errorf("listen on %s (server.listen in %s, or -listen, or $%s): %w", cfg.Server.Listen, p.path, config.EnvListen, err)
				}
			}
			ln = p.srv.Limit(ln) // under TLS, so a refused connection costs no handshake
			p.attrs = []any{"version", Version, "listen", ln.Addr().String(), "tls", cfg.Server.TLS.String()}
			if passed.main != nil {
				p.attrs = append(p.attrs, "listen_from", "the service manager")
			}
			if p.tls != nil {
				ln = p.tls.Listener(ln)
				if p.tls.HTTP != nil {
					hln := passed.http
					if hln == nil {
						if hln, err = net.Listen("tcp", cfg.Server.HTTPListen); err != nil {
							ln.Close()
							return fmt.Errorf("listen on %s (server.http_listen in %s): %w", cfg.Server.HTTPListen, p.path, err)
						}
					}
					p.attrs = append(p.attrs, "http_listen", hln.Addr().String())
					p.httpSrv = p.tls.HTTPServer()
					go func() {
						if err := p.httpSrv.Serve(hln); !errors.Is(err, http.ErrServerClosed) {
							p.served <- fmt.Errorf("serve %s (server.http_listen): %w", cfg.Server.HTTPListen, err)
						}
					}()
				}
			}
			p.ln = ln
			p.bindLocal()
			return nil
		},
		StopFunc: func(ctx context.Context) error {
			if p.serving {
				return nil // the server's stop closed them
			}
			p.ln.Close()
			if p.local != nil {
				p.local.Close() // and its file is removed
			}
			if p.httpSrv != nil {
				p.httpSrv.Shutdown(ctx)
			}
			return nil
		},
	}
}

// accessWatch makes the first password once the listeners are bound,
// then takes up changes made elsewhere and applies the command line's
// requests (ones left while the server was stopped first) every
// access.Poll.
func (p *parts) accessWatch() app.Service {
	watch := []app.Service{app.Loop(p.acc.Watch)}
	if p.cfg.Storage.Backend != app.BackendPostgres { // where hookbox user, token and passwd leave requests: bbolt's data dir
		dir := p.cfg.Server.DataDir
		watch = append(watch, app.Loop(func(ctx context.Context) { takeAccessRequests(ctx, p.acc, dir) }))
	}
	watchers := all(watch...)
	return app.ServiceFuncs{
		StartFunc: func(ctx context.Context) error {
			if err := p.acc.Ensure(ctx); err != nil {
				return err
			}
			return watchers.Start(ctx)
		},
		StopFunc: watchers.Stop,
	}
}

// reloads puts the file's config in force again on each SIGHUP that hup
// hears (reload.go).
func (p *parts) reloads(hup <-chan os.Signal) app.Service {
	return app.Loop(func(ctx context.Context) { p.reload.watch(ctx, hup) })
}

// server serves the bound listener; its stop stops accepting and drains
// the requests in flight (and ends the streams) within the deadline.
func (p *parts) server() app.Service {
	return app.ServiceFuncs{
		StartFunc: func(context.Context) error {
			attrs := append(p.attrs, "data", p.n.where, "sources", len(p.cfg.Sources))
			p.own.Info("hookbox started", append(attrs, startHints()...)...)
			p.serving = true
			go func() { p.served <- p.srv.Serve(p.ln) }()
			if p.local != nil {
				go p.serveLocal()
			}
			return nil
		},
		StopFunc: func(ctx context.Context) error {
			err := p.srv.Shutdown(ctx)
			if p.local != nil {
				p.local.Close() // closed already, unless the stop came first
			}
			if p.httpSrv != nil {
				p.httpSrv.Shutdown(ctx) // serve's outcome is the main server's
			}
			return err
		},
	}
}

// certificates gets the ACME certificate now (so that trouble shows at
// start), then reports any trouble with the certificate, there and in
// the log, for as long as hookbox runs.
func (p *parts) certificates() app.Service {
	if p.tls == nil {
		return app.ServiceFuncs{}
	}
	return app.Loop(p.tls.Watch)
}

// all is services as one, started in order and stopped in reverse.
func all(services ...app.Service) app.Service {
	s := &app.Services{}
	for _, svc := range services {
		s.Parts = append(s.Parts, app.Part{Service: svc})
	}
	return s
}

// takeAccessRequests applies the command line's access requests in dir
// now and every access.Poll until ctx ends.
func takeAccessRequests(ctx context.Context, a *access.Service, dir string) {
	t := time.NewTicker(access.Poll)
	defer t.Stop()
	for {
		a.TakeRequests(ctx, dir)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// status is the one line `systemctl status hookbox` shows while it
// serves (STATUS=).
func (p *parts) status() string {
	return fmt.Sprintf("serving %d sources on %s, data in %s", len(p.cfg.Sources), p.ln.Addr(), p.n.where)
}
