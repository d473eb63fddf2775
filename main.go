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
	"os"
	"os/signal"
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

	receiver := app.NewReceiver(cfg, db)
	sweeper := app.NewSweeper(cfg, db)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	sched := app.NewCron(logger.With("component", "cron"))
	if _, err := sched.AddFunc(cfg.Retention.Sweep, func() { sweeper.Run(ctx) }); err != nil {
		return fmt.Errorf("%s: retention.sweep: %w", path, err)
	}
	sched.Start()

	srv := web.New(cfg, receiver, db.Ping)
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
	case <-ctx.Done():
		logger.Info("shutting down")
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		err = srv.Shutdown(sctx)
		cancel()
	}
	<-sched.Stop().Done() // wait for a running sweep before closing the file
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	logger.Info("hookbox stopped")
	return nil
}
