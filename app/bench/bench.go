// Package bench is the load tool behind `hookbox bench`: it sends webhooks
// signed for a source's provider to a server, closed or open loop, and
// measures throughput, latency, CPU and (with -compare, which starts a
// verify-only server, a stateless relay and a real hookbox in this
// process) delivery to a local sink. BENCHMARKS.md records what it measured.
package bench

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"hookbox/app/config"
)

// Options are the flags of `hookbox bench`.
type Options struct {
	Config   string        // the config file whose source signs the load
	Source   string        // that source's name
	URL      string        // the target (default: the source's URL on server.listen)
	Conns    int           // connections (closed loop), or the most requests in flight (open loop)
	Rate     float64       // open loop: requests per second (0: closed loop)
	Duration time.Duration // how long to send
	Requests int           // stop after this many requests (0: run for Duration)
	Size     int           // body size in bytes
	Dup      float64       // share of requests that resend an earlier event id
	JSONOut  string        // also write the results as JSON to this file
	Compare  bool          // run a verify-only server, a stateless relay and a real hookbox here, print the ratios
	Provider string        // -compare: the provider that signs the load
	Warmup   time.Duration // load before measuring (not counted)
	// CPUProfile is a file for a CPU profile of this process (with
	// Compare: of the hookbox run only, its load and sink included).
	CPUProfile string
	Backlog    int  // -compare: events waiting for the sink when hookbox starts
	Deliver    bool // -compare: route the events to a local sink
	// Store adds, with Compare, a hookbox on PostgreSQL (a schema of its
	// own in DatabaseURL, dropped afterwards) to the same run.
	Store       string
	DatabaseURL string

	// Serve runs hookbox serve with the config at path until ctx ends:
	// Compare's real node. The command line passes its own.
	Serve func(ctx context.Context, path string, logger *slog.Logger) error
	// TuneRuntime applies the runtime settings serve uses (Compare runs
	// it first, for both servers alike); nil: none.
	TuneRuntime func()
	// Conn bounds each connection the way hookbox's own server does:
	// Compare's verify-only server, relay and sink take it, so that they
	// differ from hookbox only in the work they do. The command line
	// passes app/web's.
	Conn ConnLimits
}

// ConnLimits are what an HTTP server allows one connection: how long it
// may take to send a request, to read the answer and to sit idle, and
// how large its request line and headers may be.
type ConnLimits struct {
	ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	ReadBufferSize                         int
}

// Result is what one load run measured.
type Result struct {
	Target     string         `json:"target"`
	Mode       string         `json:"mode"` // closed (N connections) or open (fixed rate)
	Conns      int            `json:"connections"`
	Rate       float64        `json:"rate,omitempty"`
	BodyBytes  int            `json:"body_bytes"`
	DupShare   float64        `json:"duplicate_share"`
	Requests   int            `json:"requests"`
	Seconds    float64        `json:"seconds"`
	Throughput float64        `json:"requests_per_second"`
	P50MS      float64        `json:"p50_ms"`
	P90MS      float64        `json:"p90_ms"`
	P99MS      float64        `json:"p99_ms"`
	MaxMS      float64        `json:"max_ms"`
	Status     map[string]int `json:"status"`
	Errors     int            `json:"errors"`
	// CPUPerReq is this process's CPU time (user and system) while
	// measuring, per request answered: the load, the server and, with
	// -compare, hookbox's dispatcher and the sink. Steadier than
	// throughput on a noisy machine.
	CPUPerReqUS float64 `json:"cpu_us_per_request"`
	// The machine's CPU while measuring, from /proc/stat (Linux only):
	// how busy all its CPUs were, and the CPU time they spent per request,
	// the kernel's network, disk and journal work included, which the
	// process's own figure misses. With the busy share it tells whether a
	// run was bound by CPU (near 100%) or by waiting.
	MachineCPUs        int     `json:"machine_cpus,omitempty"`
	MachineBusyPct     float64 `json:"machine_busy_percent,omitempty"`
	MachineCPUPerReqUS float64 `json:"machine_cpu_us_per_request,omitempty"`
	// Delivery is filled by -compare: when events reached the local sink.
	Delivered      int     `json:"delivered,omitempty"`
	DeliveryP50MS  float64 `json:"delivery_p50_ms,omitempty"`
	DeliveryP99MS  float64 `json:"delivery_p99_ms,omitempty"`
	DeliveryMaxMS  float64 `json:"delivery_max_ms,omitempty"`
	DeliveryLagSec float64 `json:"delivery_drain_after_load_s,omitempty"`
	// Repeats counts deliveries of an event the sink already had: none
	// are expected without failures, but delivery is at least once.
	Repeats int `json:"repeated_deliveries"`
	// Backlog is filled by -compare -backlog: N events waiting at start-up,
	// and how long after hookbox started the sink had them all.
	// Storage counts from hookbox's /metrics over the measured load
	// (-compare): group commits, writes per commit, pages written per
	// accepted request (its delivery's bookkeeping included).
	Commits         int     `json:"commits,omitempty"`
	WritesPerCommit float64 `json:"writes_per_commit,omitempty"`
	PagesPerEvent   float64 `json:"pages_per_event,omitempty"`
	Backlog         int     `json:"backlog,omitempty"`
	BacklogDrainSec float64 `json:"backlog_drained_s,omitempty"`
}

// Run loads a server as o says and prints what it measured to stdout:
// the server a config describes, or, with o.Compare, a verify-only server
// and a real hookbox started here. With o.JSONOut it also writes the
// results there as JSON.
func Run(ctx context.Context, o Options, stdout io.Writer) error {
	if o.CPUProfile != "" && !o.Compare {
		stopProf, err := startCPUProfile(o.CPUProfile)
		if err != nil {
			return err
		}
		defer stopProf()
	}
	var results []Result
	var err error
	if o.Compare {
		results, err = benchCompare(ctx, o, stdout)
	} else {
		var r Result
		r, err = benchConfigured(ctx, o)
		results = []Result{r}
		if err == nil {
			printResult(stdout, r)
		}
	}
	if err != nil {
		return err
	}
	if o.JSONOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(o.JSONOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// benchConfigured loads a server described by the config file.
func benchConfigured(ctx context.Context, o Options) (Result, error) {
	cfg, err := config.Load(o.Config, nil)
	if err != nil {
		return Result{}, err
	}
	src := cfg.SourceByName(o.Source)
	if src == nil {
		return Result{}, fmt.Errorf("-source: no [[source]] named %q in %s", o.Source, o.Config)
	}
	url := o.URL
	if url == "" {
		url = cfg.Server.LocalBase() + "/in/" + src.Name
	}
	return loadRun(ctx, o, url, newSigner(src))
}

// randomID returns a fresh random id.
func randomID() string {
	var b [12]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead).
	return "test-" + hex.EncodeToString(b[:])
}
