package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/systemd"
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
//     what a small VPS has; once the store is open serve fits it to the
//     store (fitMemory).
const (
	defaultGCPercent   = 400
	defaultMemoryLimit = 256 << 20
	procsPerCPU        = 2
)

// memoryHeadroom is the soft memory limit serve sets above the heap the
// opened store holds (the remembered ids' index, 36 bytes an id): with
// GOGC=400 the heap under load grows to the limit, and 256 MiB in all
// made 64 connections' load 206 MB resident with an empty store (374 MB
// with 1,000,000 events), over issue 47's 200 MB; this headroom, 140 MB
// and 131 MB (BENCHMARKS.md, "Memory and start").
const memoryHeadroom = 128 << 20

// fitMemory, once the store is open, gives back the garbage that building
// its index left (GOGC=400 would keep it mapped: with 1,000,000 stored
// events idle RSS 80 → 73 MB) and, unless GOMEMLIMIT is set, sets the soft
// memory limit to the heap then live plus memoryHeadroom.
func fitMemory() {
	debug.FreeOSMemory() // a collection first: HeapAlloc is then what is live
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	debug.SetMemoryLimit(int64(ms.HeapAlloc) + memoryHeadroom)
}

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
	return serve(ctx, &configOptions{path: &path, listen: &none, dataDir: &none, lookupEnv: fileOnly, keepMemoryLimit: true}, logger)
}

func serve(ctx context.Context, opts *configOptions, logger *slog.Logger) error {
	cfg, err := opts.load()
	if err != nil {
		return err
	}
	return serveConfig(ctx, opts, cfg, logger)
}

// serveConfig is serve with cfg, loaded from opts: the store opened, its
// parts wired (parts.go), then started in one ordered list and stopped
// in reverse. What a part needs comes before it; the stop goes from the
// edge in: stop accepting and drain the HTTP requests, then the
// scheduler's running job, the dispatcher's sends, the alerts and their
// mail, and the store last.
func serveConfig(ctx context.Context, opts *configOptions, cfg *app.Config, logger *slog.Logger) error {
	own := logger.With("component", "serve") // serve's own lines; each part names its own component
	tuneRuntime()
	notify := systemd.NewNotifier() // before anything can start a child that would take its variables
	n, err := openStore(ctx, *opts.path, cfg, logger)
	if err != nil {
		return err
	}
	if !opts.keepMemoryLimit {
		fitMemory()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	// SIGHUP from here on is a reload (reload.go), never the end of the
	// process (its default): one that comes while starting waits for the
	// reloader, one during the shutdown is dropped.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	p, err := wire(ctx, opts, cfg, n, notify, logger)
	if err != nil {
		n.store.Close()
		return err
	}
	services := &app.Services{Logger: own, StopWithin: shutdownGrace, Parts: []app.Part{
		{Name: "store", Service: p.store()},         // the committer: closed last
		{Name: "listeners", Service: p.listeners()}, // bound first: a port in use starts nothing
		{Name: "storage health", Service: p.storageHealth()},
		{Name: "mail", Service: p.mail()},
		{Name: "alerts", Service: p.alerts()},
		{Name: "stream hub", Service: p.streamHub()},
		{Name: "scheduler", Service: p.scheduler()}, // sweeps, alert checks, backups
		{Name: "dispatcher", Service: p.dispatch()},
		{Name: "access", Service: p.accessWatch()}, // the first password, once every listener is bound
		{Name: "reload", Service: p.reloads(hup)},
		{Name: "quarantine", Service: app.Loop(p.receiver.RunQuarantine)}, // its writer stops after the server
		{Name: "server", Service: p.server()},
		{Name: "certificates", Service: p.certificates()},
	}}
	if err := services.Start(ctx); err != nil {
		return err
	}
	// Ready: the store is open and every listener is served. Under
	// Type=notify the manager waits for this before it counts the start
	// (or restart) done.
	notify.Notify("READY=1\nSTATUS=" + p.status())

	select {
	case err = <-p.served:
		stop()
	case <-ctx.Done():
	}
	own.Info("shutting down")
	notify.Notify(fmt.Sprintf("STOPPING=1\nSTATUS=draining: accepting no connection, finishing the requests and sends in flight (at most %s)", shutdownGrace))
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if serr := services.Stop(sctx); err == nil {
		err = serr
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	own.Info("hookbox stopped")
	return nil
}

// runHints are the start line's last attributes: how to look after this
// process where it runs. Under systemd (it sets INVOCATION_ID for every
// unit it starts, NOTIFY_SOCKET for a Type=notify one) the unit's
// commands, the unit named from cgroup (the text of /proc/self/cgroup, ""
// when unknown: "hookbox"); elsewhere the foreground ones, for the
// process pid, whose log is on stderr.
func runHints(getenv func(string) string, cgroup string, pid int) []any {
	if getenv("INVOCATION_ID") == "" && getenv("NOTIFY_SOCKET") == "" {
		return []any{"stop", "Ctrl-C", "reload", fmt.Sprintf("hookbox reload (or kill -HUP %d)", pid), "log", "stderr"}
	}
	unit, user := systemdUnit(cgroup)
	ctl, journal := "systemctl", "journalctl"
	if user {
		ctl, journal = "systemctl --user", "journalctl --user"
	}
	return []any{"status", ctl + " status " + unit, "reload", ctl + " reload " + unit, "log", journal + " -u " + unit}
}

// systemdUnit finds the service a process runs in from its cgroup file
// (0::/system.slice/hookbox.service): the last *.service in the path,
// without the suffix ("hookbox" when there is none), and whether it is
// under a user's service manager (user@1000.service).
func systemdUnit(cgroup string) (unit string, user bool) {
	unit = "hookbox"
	for _, line := range strings.Split(cgroup, "\n") {
		i := strings.LastIndexByte(line, ':')
		if i < 0 {
			continue
		}
		for _, part := range strings.Split(line[i+1:], "/") {
			if name, ok := strings.CutSuffix(part, ".service"); ok && name != "" {
				if strings.HasPrefix(name, "user@") {
					user = true
					continue
				}
				unit = name
			}
		}
	}
	return unit, user
}

// startHints is runHints for this process.
func startHints() []any {
	cgroup, _ := os.ReadFile("/proc/self/cgroup")
	return runHints(os.Getenv, string(cgroup), os.Getpid())
}
