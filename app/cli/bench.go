package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"hookbox/app"
	"hookbox/app/bench"
	"hookbox/app/web"
)

// runBench reads bench's flags; the load tool is hookbox/app/bench.
func runBench(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	o := bench.Options{Serve: servePath, TuneRuntime: tuneRuntime, Conn: bench.ConnLimits{ReadTimeout: web.ReadTimeout,
		WriteTimeout: web.WriteTimeout, IdleTimeout: web.IdleTimeout, ReadBufferSize: web.ReadBufferSize}}
	fs.StringVar(&o.Config, "config", "config.toml", "path of the config file (its source signs the load)")
	fs.StringVar(&o.Source, "source", "", "the source whose provider and secret sign the requests")
	fs.StringVar(&o.URL, "url", "", "target URL (default: the source's URL on server.listen)")
	fs.IntVar(&o.Conns, "c", 64, "connections (closed loop), or the most requests in flight (open loop)")
	fs.Float64Var(&o.Rate, "rate", 0, "open loop: requests per second on a fixed schedule (0: closed loop)")
	fs.DurationVar(&o.Duration, "d", 10*time.Second, "how long to send")
	fs.IntVar(&o.Requests, "n", 0, "stop after this many requests (0: run for -d)")
	fs.IntVar(&o.Size, "size", 2048, "body size in bytes")
	fs.Float64Var(&o.Dup, "dup", 0, "share of requests that resend an earlier event id (0..1)")
	fs.StringVar(&o.JSONOut, "json", "", "also write the results as JSON to this file")
	fs.BoolVar(&o.Compare, "compare", false, "run a verify-only server, a stateless relay (verify, forward to a local sink, store nothing) and a real hookbox (route to that sink) here, load each the same way, print the ratios")
	fs.StringVar(&o.Provider, "provider", "shopify", "-compare: the provider that signs the load")
	fs.DurationVar(&o.Warmup, "warmup", time.Second, "load before measuring (not counted)")
	fs.BoolVar(&o.Deliver, "deliver", true, "-compare: route the events to a local sink while loading (false: ingest only)")
	fs.IntVar(&o.Backlog, "backlog", 0, "-compare: this many events wait for the sink when hookbox starts; the hookbox load ends when the sink has them all, so its latency is ingest while a backlog drains")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of this process to FILE (with -compare: of the hookbox run only, its load and sink included)")
	fs.StringVar(&o.Store, "store", "", "-compare: also run a hookbox node on this store (postgres) in the same run, and print its ratio to the bbolt node")
	fs.StringVar(&o.DatabaseURL, "database-url", "", "-store postgres: the database (default $"+app.DefaultDatabaseURLEnv+"); the node runs in a schema of its own, dropped afterwards")
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if o.Store != "" {
		if o.DatabaseURL == "" {
			o.DatabaseURL = os.Getenv(app.DefaultDatabaseURLEnv)
		}
		switch {
		case o.Store != app.BackendPostgres || !o.Compare:
			fmt.Fprintln(stderr, "hookbox bench: -store takes postgres, with -compare")
			return 2
		case o.DatabaseURL == "":
			fmt.Fprintf(stderr, "hookbox bench: -store postgres needs -database-url or $%s\n", app.DefaultDatabaseURLEnv)
			return 2
		case o.Backlog > 0:
			fmt.Fprintln(stderr, "hookbox bench: -backlog is for the bbolt node only; leave out -store")
			return 2
		}
	}
	if o.Dup < 0 || o.Dup > 1 || o.Conns < 1 || o.Size < 64 || o.Rate < 0 || o.Backlog < 0 {
		fmt.Fprintln(stderr, "hookbox bench: -dup is 0..1, -c at least 1, -size at least 64, -rate and -backlog not negative")
		return 2
	}
	if o.Backlog > 0 && (!o.Compare || !o.Deliver) {
		fmt.Fprintln(stderr, "hookbox bench: -backlog needs -compare with delivery")
		return 2
	}
	if err := bench.Run(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "hookbox bench: %v\n", err)
		return 1
	}
	return 0
}
