package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
)

// benchCompare starts, in this process, a verify-only Fiber server with
// hookbox's server settings and a real hookbox (data in a temp dir, one
// route to a local sink), drives both with the same load, and prints the
// ratio. The machine is shared, so the ratio is the figure that counts.
func benchCompare(ctx context.Context, o Options, stdout io.Writer) ([]Result, error) {
	if o.Serve == nil {
		return nil, errors.New("-compare: no server to start (Options.Serve)")
	}
	if o.TuneRuntime != nil {
		o.TuneRuntime() // the runtime settings serve uses, for both servers alike
	}
	// hookbox's parts log through slog's default logger (serve sets it to
	// its own); here it would print a line per accepted event into the
	// report, and logging is not what is measured.
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	dir, err := os.MkdirTemp("", "hookbox-bench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	secret := "bench-" + randomID()
	if o.Provider == "standard" || o.Provider == "bigcommerce" {
		secret = "whsec_YmVuY2gtc2VjcmV0LWJlbmNoLXNlY3JldA=="
	}

	statusPassword := randomID()
	sink := newBenchSink()
	sinkLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sinkSrv := &fasthttp.Server{Handler: sink.handle, ReadTimeout: o.Conn.ReadTimeout, WriteTimeout: o.Conn.WriteTimeout}
	go sinkSrv.Serve(sinkLn)
	defer func() { // without waiting for hookbox's idle keep-alive connections to time out
		sctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		sinkSrv.ShutdownWithContext(sctx)
	}()

	port, err := PickPort()
	if err != nil {
		return nil, err
	}
	// The same server section with another port serves a second node. The
	// load comes from one address, with as many connections as -c says.
	server := func(port int) string {
		return fmt.Sprintf("[server]\nlisten = \"127.0.0.1:%d\"\npublic_url = \"http://127.0.0.1:%d\"\n", port, port)
	}
	cfgText := server(port) + fmt.Sprintf(`data_dir = %q
max_connections = %d
max_connections_per_ip = 0
[status]
password = %q
[[source]]
name = "bench"
provider = %q
secret = %q
[[destination]]
name = "sink"
url = "http://%s/sink"
concurrency = 64
[[route]]
source = "bench"
to = ["sink"]
`, filepath.Join(dir, "data"), max(app.DefaultMaxConnections, 2*o.Conns), statusPassword, o.Provider, secret, sinkLn.Addr())
	if o.Provider == "hmac" { // its id and signature header come from the config
		cfgText = strings.Replace(cfgText, "[[destination]]", "id = \"{body.id}\"\nsignature_header = \"X-Signature\"\n[[destination]]", 1)
	}
	if !o.Deliver {
		cfgText = cfgText[:strings.Index(cfgText, "[[destination]]")]
	}
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		return nil, err
	}
	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		return nil, err
	}
	src := cfg.Sources[0]
	sg := newSigner(src)

	// (a) the ceiling: verify the signature, answer, nothing else.
	verifyLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	verifyOnly := fiber.New(o.Conn.fiber(cfg.Server.MaxBodyBytes))
	verifyOnly.Post("/in/:source", func(c *fiber.Ctx) error {
		if !verified(c, src) {
			return c.SendStatus(401)
		}
		return c.JSON(fiber.Map{"status": "accepted"})
	})
	go verifyOnly.Listener(verifyLn)
	defer verifyOnly.Shutdown()

	ceiling, err := loadRun(ctx, o, "http://"+verifyLn.Addr().String()+"/in/bench", sg)
	if err != nil {
		return nil, fmt.Errorf("verify-only: %w", err)
	}
	ceiling.Target = "verify-only Fiber server (the ceiling)"
	results := []Result{ceiling}
	// (b) a stateless relay: verify, forward to the sink, answer; no store.
	var relayed *Result
	if o.Deliver && o.Backlog == 0 {
		addr, stopRelay, err := startRelay(src, cfg.Server.MaxBodyBytes, "http://"+sinkLn.Addr().String()+"/sink", o.Conns, o.Conn)
		if err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		sink.reset()
		r, err := loadRun(ctx, o, "http://"+addr+"/in/bench", sg)
		stopRelay()
		if err != nil {
			return nil, fmt.Errorf("relay: %w", err)
		}
		r.Delivered = sink.count()
		r.DeliveryP50MS, r.DeliveryP99MS, r.DeliveryMaxMS, r.DeliveryLagSec = sink.latencies(time.Now())
		r.Target = "stateless relay: verify, forward to the same sink, answer; nothing stored"
		results = append(results, r)
		relayed = &r
	}
	// (c) the real hookbox, in this process, on its own data dir, with
	// -backlog events already waiting for the sink.
	if o.Backlog > 0 {
		if err := preloadBacklog(ctx, filepath.Join(dir, "data"), o, sg, sink); err != nil {
			return nil, fmt.Errorf("backlog: %w", err)
		}
	}
	durable, err := benchNode(ctx, o, cfgPath, port, statusPassword, sg, sink, o.CPUProfile)
	if err != nil {
		return nil, err
	}
	durable.Target = "hookbox: verify, dedupe, fsync'd commit, route to a local sink"
	if !o.Deliver {
		durable.Target = "hookbox: verify, dedupe, fsync'd commit (no route)"
	}
	results = append(results, durable)
	if o.Store == app.BackendPostgres {
		dbURL, drop, err := benchSchema(ctx, o.DatabaseURL)
		if err != nil {
			return nil, err
		}
		defer drop()
		pgPort, err := PickPort()
		if err != nil {
			return nil, err
		}
		pgText := strings.Replace(cfgText, server(port), server(pgPort), 1) +
			fmt.Sprintf("[storage]\nbackend = \"postgres\"\nurl = %q\n[backup]\nschedule = \"off\"\n", dbURL)
		pgPath := filepath.Join(dir, "postgres.toml")
		if err := os.WriteFile(pgPath, []byte(pgText), 0o600); err != nil {
			return nil, err
		}
		pg, err := benchNode(ctx, o, pgPath, pgPort, statusPassword, sg, sink, "")
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		pg.Target = strings.Replace(durable.Target, "hookbox:", "hookbox on PostgreSQL ("+postgres.MaskURL(o.DatabaseURL)+"):", 1)
		results = append(results, pg)
	}
	for _, r := range results {
		printResult(stdout, r)
	}
	fmt.Fprintf(stdout, "ratio: hookbox answers %.1f%% of the verify-only ceiling (%.0f / %.0f requests/s); p99 %.2f ms vs %.2f ms\n",
		100*durable.Throughput/ceiling.Throughput, durable.Throughput, ceiling.Throughput, durable.P99MS, ceiling.P99MS)
	if relayed != nil {
		fmt.Fprintf(stdout, "relay: hookbox answers %.1f%% of the stateless relay (%.0f / %.0f requests/s), which is %.1f%% of the ceiling; p99 %.2f ms vs %.2f ms\n",
			100*durable.Throughput/relayed.Throughput, durable.Throughput, relayed.Throughput, 100*relayed.Throughput/ceiling.Throughput, durable.P99MS, relayed.P99MS)
	}
	if o.Store == app.BackendPostgres {
		pg := results[len(results)-1]
		fmt.Fprintf(stdout, "postgres: the PostgreSQL node answers %.1f%% of the bbolt node (%.0f / %.0f requests/s) and %.1f%% of the ceiling; p99 %.2f ms vs %.2f ms\n",
			100*pg.Throughput/durable.Throughput, pg.Throughput, durable.Throughput, 100*pg.Throughput/ceiling.Throughput, pg.P99MS, durable.P99MS)
	}
	if durable.MachineCPUPerReqUS > 0 && ceiling.Throughput > 0 {
		// What hookbox's cost per request would allow with every CPU busy:
		// the most any tuning of its waiting could give at that cost.
		full := float64(durable.MachineCPUs) * 1e6 / durable.MachineCPUPerReqUS
		fmt.Fprintf(stdout, "at %.0f µs of machine CPU per request, all %d CPUs busy would answer about %.0f requests/s: %.1f%% of this ceiling\n",
			durable.MachineCPUPerReqUS, durable.MachineCPUs, full, 100*full/ceiling.Throughput)
	}
	return results, nil
}

// benchNode starts hookbox serve with the config at cfgPath (listening on
// port) in this process, loads it as o says, and returns what it measured,
// deliveries to sink included; with prof it writes a CPU profile of the run.
func benchNode(ctx context.Context, o Options, cfgPath string, port int, statusPassword string, sg *signer, sink *benchSink, prof string) (Result, error) {
	started := time.Now()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- o.Serve(sctx, cfgPath, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() { stop(); <-served }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-served: // say why at once, e.g. the port was taken
			served <- err // for the deferred wait
			return Result{}, fmt.Errorf("hookbox did not start: %w", err)
		default:
		}
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return Result{}, errors.New("hookbox did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}

	sink.reset()
	if prof != "" {
		stopProf, err := startCPUProfile(prof)
		if err != nil {
			return Result{}, err
		}
		defer stopProf()
	}
	lctx := ctx
	if o.Backlog > 0 { // the load lasts while the backlog drains
		var cancel context.CancelFunc
		lctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-sink.backlogDone:
				cancel()
			case <-lctx.Done():
			}
		}()
	}
	before, err := scrapeCommits(base, statusPassword)
	if err != nil {
		return Result{}, err
	}
	durable, err := loadRun(lctx, o, base+"/in/bench", sg)
	if err != nil {
		return Result{}, fmt.Errorf("hookbox: %w", err)
	}
	after, err := scrapeCommits(base, statusPassword)
	if err != nil {
		return Result{}, err
	}
	if commits := after[0] - before[0]; commits > 0 && durable.Status["200"] > 0 {
		durable.Commits = int(commits)
		durable.WritesPerCommit = (after[1] - before[1]) / commits
		durable.PagesPerEvent = (after[2] - before[2]) / float64(durable.Status["200"])
	}
	if o.Backlog > 0 && durable.Requests == 0 {
		return Result{}, errors.New("the backlog drained before the load was measured: use a larger -backlog or a shorter -warmup")
	}
	loadEnd := time.Now()
	want := durable.Status["200"]
	for deadline := time.Now().Add(60 * time.Second); o.Deliver && sink.count() < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	durable.Delivered = sink.count()
	sink.mu.Lock()
	durable.Repeats = sink.repeats
	sink.mu.Unlock()
	durable.DeliveryP50MS, durable.DeliveryP99MS, durable.DeliveryMaxMS, durable.DeliveryLagSec = sink.latencies(loadEnd)
	if o.Backlog > 0 {
		durable.Backlog = o.Backlog
		select {
		case <-sink.backlogDone:
			durable.BacklogDrainSec = sink.backlogLast().Sub(started).Seconds()
		case <-time.After(60 * time.Second):
		}
	}

	return durable, nil
}

// benchSchema makes a schema of its own for the PostgreSQL node in the
// database at dbURL and returns the URL that uses it (search_path), and a
// function that drops it.
func benchSchema(ctx context.Context, dbURL string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return "", nil, fmt.Errorf("connect to %s: %v", postgres.MaskURL(dbURL), strings.ReplaceAll(err.Error(), dbURL, postgres.MaskURL(dbURL)))
	}
	schema := "hookbox_bench_" + strings.TrimPrefix(randomID(), "test-")[:12]
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		conn.Close(ctx)
		return "", nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	u, err := url.Parse(dbURL)
	if err != nil {
		conn.Close(ctx)
		return "", nil, errors.New("-database-url is not a URL")
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), func() {
		conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		conn.Close(context.Background())
	}, nil
}

// scrapeCommits reads hookbox_commits_total, hookbox_commit_writes_total
// and hookbox_pages_written_total from base's /metrics.
func scrapeCommits(base, password string) ([3]float64, error) {
	var v [3]float64
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return v, err
	}
	req.SetBasicAuth(app.DefaultStatusUser, password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return v, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return v, fmt.Errorf("metrics: %d %v", resp.StatusCode, err)
	}
	for line := range strings.Lines(string(b)) {
		for i, name := range []string{"hookbox_commits_total ", "hookbox_commit_writes_total ", "hookbox_pages_written_total "} {
			if value, ok := strings.CutPrefix(line, name); ok {
				if v[i], err = strconv.ParseFloat(strings.TrimSpace(value), 64); err != nil {
					return v, fmt.Errorf("metrics: %q: %w", line, err)
				}
			}
		}
	}
	return v, nil
}

// preloadBacklog stores o.Backlog events routed to the sink in the data
// dir hookbox is about to open, as if accepted while the sink was away.
func preloadBacklog(ctx context.Context, dataDir string, o Options, sg *signer, sink *benchSink) error {
	db, err := bboltstore.Open(dataDir)
	if err != nil {
		return err
	}
	defer db.Close()
	sink.expectBacklog(o.Backlog)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(o.Backlog) && ctx.Err() == nil; i = next.Add(1) {
				now := time.Now()
				id := backlogPrefix + strconv.FormatInt(i, 10)
				body, _, err := sg.request(id, o.Size, now)
				if err == nil {
					e := &app.Event{Source: sg.src.Name, ID: id, Topic: "bench/event", ReceivedAt: now, Body: body}
					_, err = db.Accept(ctx, e, now.Add(time.Hour), &app.Plan{Direct: app.DirectTo("sink")})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
