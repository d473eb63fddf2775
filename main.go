// Command hookbox receives webhooks, proves them genuine, remembers each
// event once in bbolt and answers only after the commit. See README.md.
package main

import (
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
	"strconv"
	"strings"
	"syscall"
	"time"

	"hookbox/app"
	"hookbox/app/web"
	"hookbox/storage"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// shutdownGrace bounds how long in-flight requests may take at shutdown.
const shutdownGrace = 10 * time.Second

const usage = `hookbox receives webhooks, verifies them and stores each event once.

Usage:
  hookbox [serve] [-config FILE]   serve (the default command)
  hookbox check [-config FILE]     validate the config and print a summary
  hookbox replay [-config FILE] -all | ID...
                                   replay dead deliveries (all, or by id) through
                                   the running server's admin API
  hookbox version                  print the version
`

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit, so that tests can call it.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	configPath := fs.String("config", "config.toml", "path of the config file")
	logLevel := fs.String("log-level", "info", "debug, info, warn or error")
	all := fs.Bool("all", false, "replay: every dead delivery")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(stderr, "hookbox: -log-level: %v\n", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	switch cmd {
	case "serve":
		if err := serve(ctx, *configPath, logger); err != nil {
			logger.Error("hookbox stopped", slog.Any("error", err))
			return 1
		}
		return 0
	case "check":
		return check(*configPath, stdout, stderr)
	case "replay":
		return replay(*configPath, *all, fs.Args(), stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "hookbox", version)
		return 0
	case "help":
		fs.Usage()
		return 0
	}
	fmt.Fprintf(stderr, "hookbox: unknown command %q\n\n", cmd)
	fs.Usage()
	return 2
}

func check(path string, stdout, stderr io.Writer) int {
	cfg, err := app.LoadConfig(path, nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	fmt.Fprintf(stdout, "%s: ok\nlisten %s, data in %s\n", path, cfg.Server.Listen, cfg.Server.DataDir)
	for _, s := range cfg.Sources {
		fmt.Fprintf(stdout, "source %-16s %-12s POST %s\n", s.Name, s.Provider, s.URL)
	}
	return 0
}

func serve(ctx context.Context, path string, logger *slog.Logger) error {
	cfg, err := app.LoadConfig(path, nil)
	if err != nil {
		return err
	}
	db, err := storage.Open(cfg.Server.DataDir)
	if err != nil {
		return err
	}
	defer db.Close()

	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	dispatcher := app.NewDispatcher(cfg, db)
	dispatcher.Version = version
	receiver := app.NewReceiver(cfg, db)
	receiver.Notify = dispatcher.Wake
	dispatcher.OnFired = func(route string, n int) {
		if rs := receiver.RouteStats(route); rs != nil {
			rs.Fired.Add(uint64(n))
		}
	}
	sweeper := app.NewSweeper(cfg, db)
	alerter := app.NewAlerter(cfg, db)

	sched := app.NewCron(logger.With("component", "cron"))
	if _, err := sched.AddFunc(cfg.Retention.Sweep, func() { sweeper.Run(ctx) }); err != nil {
		return fmt.Errorf("%s: retention.sweep: %w", path, err)
	}
	if _, err := sched.AddFunc(cfg.Alerts.Check, func() { alerter.Check(ctx) }); err != nil {
		return fmt.Errorf("%s: alerts.check: %w", path, err)
	}
	sched.Start()

	// Sends go on after ctx ends, until the shutdown deadline cancels them.
	sendCtx, cancelSends := context.WithCancel(context.Background())
	defer cancelSends()
	dispatched := make(chan struct{})
	go func() { dispatcher.Run(ctx, sendCtx); close(dispatched) }()

	srv := web.New(cfg, web.Deps{Receiver: receiver, Store: db, Wake: dispatcher.Wake, Health: db.Ping,
		Backup: func() (*os.File, int64, error) { return db.Backup(cfg.Server.DataDir) }})
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s (server.listen in %s): %w", cfg.Server.Listen, path, err)
	}
	logger.Info("hookbox started", "version", version, "listen", ln.Addr().String(),
		"data", db.Path(), "sources", len(cfg.Sources))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err = <-served:
		stop()
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	deadline := time.AfterFunc(shutdownGrace, cancelSends)
	defer deadline.Stop()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	if serr := srv.Shutdown(sctx); err == nil {
		err = serr
	}
	cancel()
	<-dispatched
	dispatcher.Wait()     // in-flight sends finish, or are cut at the deadline and sent again after a restart
	<-sched.Stop().Done() // wait for a running sweep before closing the file
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	logger.Info("hookbox stopped")
	return nil
}

// replay asks the running server to replay dead deliveries. The server
// holds the data file, so the CLI goes through its admin API on the
// configured listen address with the [status] login.
func replay(path string, all bool, ids []string, stdout, stderr io.Writer) int {
	if all == (len(ids) > 0) {
		fmt.Fprintln(stderr, "hookbox replay: give -all or delivery ids, not both or neither")
		return 2
	}
	cfg, err := app.LoadConfig(path, nil)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if cfg.Status.Password == "" {
		fmt.Fprintf(stderr, "hookbox replay: %s: status.password: not set; the admin API is closed\n", path)
		return 1
	}
	host, port, _ := net.SplitHostPort(cfg.Server.Listen)
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	base := "http://" + net.JoinHostPort(host, port) + "/api/v1"
	paths := []string{"/dead-letters/replay"}
	if !all {
		paths = paths[:0]
		for _, id := range ids {
			if _, err := strconv.ParseUint(id, 10, 64); err != nil {
				fmt.Fprintf(stderr, "hookbox replay: %q is not a delivery id\n", id)
				return 2
			}
			paths = append(paths, "/deliveries/"+id+"/replay")
		}
	}
	client := &http.Client{Timeout: 30 * time.Second}
	code := 0
	for _, p := range paths {
		req, _ := http.NewRequest(http.MethodPost, base+p, nil)
		req.SetBasicAuth(cfg.Status.User, cfg.Status.Password)
		resp, err := client.Do(req)
		if err != nil {
			fmt.Fprintf(stderr, "hookbox replay: is hookbox running on %s? %v\n", cfg.Server.Listen, errors.Unwrap(err))
			return 1
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		fmt.Fprintf(stdout, "%s\n", strings.TrimSpace(string(body)))
		if resp.StatusCode != http.StatusOK {
			code = 1
		}
	}
	return code
}
