package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/jackc/pgx/v5"
	"github.com/valyala/fasthttp"

	"hookbox/app"
	"hookbox/app/provider"
	"hookbox/app/web"
	"hookbox/storage"
	"hookbox/storage/postgres"
)

// benchOptions are the flags of `hookbox bench`.
type benchOptions struct {
	config   string
	source   string
	url      string
	conns    int
	rate     float64
	duration time.Duration
	requests int
	size     int
	dup      float64
	jsonOut  string
	compare  bool
	provider string
	warmup   time.Duration
	cpuProf  string
	backlog  int
	deliver  bool
	// store adds, with -compare, a hookbox on PostgreSQL (a schema of its
	// own in databaseURL, dropped afterwards) to the same run.
	store       string
	databaseURL string
}

// benchResult is what one load run measured.
type benchResult struct {
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

func runBench(ctx context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	var o benchOptions
	fs.StringVar(&o.config, "config", "config.toml", "path of the config file (its source signs the load)")
	fs.StringVar(&o.source, "source", "", "the source whose provider and secret sign the requests")
	fs.StringVar(&o.url, "url", "", "target URL (default: the source's URL on server.listen)")
	fs.IntVar(&o.conns, "c", 64, "connections (closed loop), or the most requests in flight (open loop)")
	fs.Float64Var(&o.rate, "rate", 0, "open loop: requests per second on a fixed schedule (0: closed loop)")
	fs.DurationVar(&o.duration, "d", 10*time.Second, "how long to send")
	fs.IntVar(&o.requests, "n", 0, "stop after this many requests (0: run for -d)")
	fs.IntVar(&o.size, "size", 2048, "body size in bytes")
	fs.Float64Var(&o.dup, "dup", 0, "share of requests that resend an earlier event id (0..1)")
	fs.StringVar(&o.jsonOut, "json", "", "also write the results as JSON to this file")
	fs.BoolVar(&o.compare, "compare", false, "run a verify-only server and a real hookbox (route to a local sink) here, load both, print the ratio")
	fs.StringVar(&o.provider, "provider", "shopify", "-compare: the provider that signs the load")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "load before measuring (not counted)")
	fs.BoolVar(&o.deliver, "deliver", true, "-compare: route the events to a local sink while loading (false: ingest only)")
	fs.IntVar(&o.backlog, "backlog", 0, "-compare: this many events wait for the sink when hookbox starts; the hookbox load ends when the sink has them all, so its latency is ingest while a backlog drains")
	fs.StringVar(&o.cpuProf, "cpuprofile", "", "write a CPU profile of this process to FILE (with -compare: of the hookbox run only, its load and sink included)")
	fs.StringVar(&o.store, "store", "", "-compare: also run a hookbox node on this store (postgres) in the same run, and print its ratio to the bbolt node")
	fs.StringVar(&o.databaseURL, "database-url", "", "-store postgres: the database (default $"+app.DefaultDatabaseURLEnv+"); the node runs in a schema of its own, dropped afterwards")
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	if o.store != "" {
		if o.databaseURL == "" {
			o.databaseURL = os.Getenv(app.DefaultDatabaseURLEnv)
		}
		switch {
		case o.store != app.BackendPostgres || !o.compare:
			fmt.Fprintln(stderr, "hookbox bench: -store takes postgres, with -compare")
			return 2
		case o.databaseURL == "":
			fmt.Fprintf(stderr, "hookbox bench: -store postgres needs -database-url or $%s\n", app.DefaultDatabaseURLEnv)
			return 2
		case o.backlog > 0:
			fmt.Fprintln(stderr, "hookbox bench: -backlog is for the bbolt node only; leave out -store")
			return 2
		}
	}
	if o.dup < 0 || o.dup > 1 || o.conns < 1 || o.size < 64 || o.rate < 0 || o.backlog < 0 {
		fmt.Fprintln(stderr, "hookbox bench: -dup is 0..1, -c at least 1, -size at least 64, -rate and -backlog not negative")
		return 2
	}
	if o.backlog > 0 && (!o.compare || !o.deliver) {
		fmt.Fprintln(stderr, "hookbox bench: -backlog needs -compare with delivery")
		return 2
	}
	if o.cpuProf != "" && !o.compare {
		stopProf, err := startCPUProfile(o.cpuProf)
		if err != nil {
			fmt.Fprintf(stderr, "hookbox bench: %v\n", err)
			return 1
		}
		defer stopProf()
	}
	var results []benchResult
	var err error
	if o.compare {
		results, err = benchCompare(ctx, o, stdout)
	} else {
		var r benchResult
		r, err = benchConfigured(ctx, o)
		results = []benchResult{r}
		if err == nil {
			printResult(stdout, r)
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "hookbox bench: %v\n", err)
		return 1
	}
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "hookbox bench: %v\n", err)
			return 1
		}
	}
	return 0
}

// benchConfigured loads a server described by the config file.
func benchConfigured(ctx context.Context, o benchOptions) (benchResult, error) {
	cfg, err := app.LoadConfig(o.config, nil)
	if err != nil {
		return benchResult{}, err
	}
	src := cfg.SourceByName(o.source)
	if src == nil {
		return benchResult{}, fmt.Errorf("-source: no [[source]] named %q in %s", o.source, o.config)
	}
	url := o.url
	if url == "" {
		url = localBase(cfg.Server.Listen) + "/in/" + src.Name
	}
	return loadRun(ctx, o, url, newSigner(src))
}

// signer makes request i: a body of the wanted size carrying the event id
// wherever the providers look for one, signed for the source.
type signer struct {
	src     *app.Source
	headers []string // headers an id template reads
}

func newSigner(src *app.Source) *signer {
	return &signer{src: src, headers: templateHeaders(src.ID)}
}

func (s *signer) request(id string, size int, now time.Time) ([]byte, http.Header, error) {
	head := fmt.Sprintf(`{"id":%q,"event_id":%q,"hash":%q,"type":"bench.event","event_type":"bench.event","scope":"store/bench","sent_ns":%d,"pad":"`,
		id, id, id, now.UnixNano())
	body := make([]byte, 0, size)
	body = append(body, head...)
	for len(body) < size-2 {
		body = append(body, 'x')
	}
	body = append(body, '"', '}')
	signID := id
	if s.src.ID != nil {
		signID = ""
	}
	h, err := provider.Sign(s.src.Provider, s.src.Settings, body, s.src.URL, signID, "bench/event", now)
	if err != nil {
		return nil, nil, err
	}
	for _, name := range s.headers {
		h.Set(name, id)
	}
	return body, h, nil
}

// loadRun drives url: closed loop with o.conns connections, or open loop at
// o.rate with latency measured from each request's scheduled time.
func loadRun(ctx context.Context, o benchOptions, url string, sg *signer) (benchResult, error) {
	client := &fasthttp.Client{MaxConnsPerHost: o.conns, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		MaxIdleConnDuration: time.Minute}
	res := benchResult{Target: url, Mode: "closed", Conns: o.conns, BodyBytes: o.size, DupShare: o.dup, Status: map[string]int{}}
	if o.rate > 0 {
		res.Mode, res.Rate = "open", o.rate
	}
	// A probe: the target must answer before the clock starts.
	body, h, err := sg.request(randomEventID(), o.size, time.Now())
	if err != nil {
		return res, err
	}
	if code, _, err := send(client, url, body, h); err != nil {
		return res, fmt.Errorf("%s: %w", url, err)
	} else if code != 200 {
		return res, fmt.Errorf("%s answered %d to a signed request: check -source and the secret", url, code)
	}

	var (
		seq      atomic.Int64
		mu       sync.Mutex
		sent     []string // ids sent so far, for duplicates
		measure  atomic.Bool
		lats     = make([][]time.Duration, o.conns)
		statuses = make([]map[int]int, o.conns)
		errs     atomic.Int64
		counted  atomic.Int64
	)
	nextID := func(r *rand.Rand) string {
		if o.dup > 0 && r.Float64() < o.dup {
			mu.Lock()
			n := len(sent)
			var id string
			if n > 0 {
				id = sent[r.IntN(n)]
			}
			mu.Unlock()
			if n > 0 {
				return id
			}
		}
		id := "evt_" + strconv.FormatUint(r.Uint64(), 36) + "-" + strconv.FormatInt(seq.Add(1), 10) // random first, as real ids
		if o.dup > 0 {
			mu.Lock()
			if len(sent) < 100_000 {
				sent = append(sent, id)
			}
			mu.Unlock()
		}
		return id
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct{ at time.Time }
	jobs := make(chan job, o.conns)
	var wg sync.WaitGroup
	for w := range o.conns {
		statuses[w] = map[int]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for {
				var at time.Time
				if o.rate > 0 {
					j, ok := <-jobs
					if !ok {
						return
					}
					at = j.at
				} else {
					if ctx.Err() != nil {
						return
					}
					at = time.Now()
				}
				body, h, err := sg.request(nextID(r), o.size, at)
				if err != nil {
					errs.Add(1)
					continue
				}
				code, _, err := send(client, url, body, h)
				lat := time.Since(at)
				if !measure.Load() {
					continue
				}
				if o.requests > 0 && counted.Add(1) > int64(o.requests) {
					cancel()
					continue
				}
				lats[w] = append(lats[w], lat)
				if err != nil {
					errs.Add(1)
				} else {
					statuses[w][code]++
				}
			}
		}()
	}
	if o.rate > 0 {
		go func() { // the schedule: one request every 1/rate, whatever the server does
			defer close(jobs)
			interval := time.Duration(float64(time.Second) / o.rate)
			next := time.Now()
			for ctx.Err() == nil {
				if d := time.Until(next); d > 0 {
					time.Sleep(d)
				}
				select {
				case jobs <- job{at: next}:
				case <-ctx.Done():
					return
				}
				next = next.Add(interval)
			}
		}()
	}
	time.Sleep(o.warmup)
	measure.Store(true)
	start, cpu0 := time.Now(), processCPU()
	mach0, machOK := readMachineCPU()
	select {
	case <-time.After(o.duration):
	case <-ctx.Done():
	}
	cancel()
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	mach1, _ := readMachineCPU()
	wg.Wait()

	var all []time.Duration
	for w := range o.conns {
		all = append(all, lats[w]...)
		for code, n := range statuses[w] {
			res.Status[strconv.Itoa(code)] += n
		}
	}
	res.Errors = int(errs.Load())
	res.Requests = len(all)
	res.Seconds = elapsed.Seconds()
	res.Throughput = float64(len(all)) / elapsed.Seconds()
	res.P50MS, res.P90MS, res.P99MS, res.MaxMS = percentiles(all)
	if len(all) > 0 {
		res.CPUPerReqUS = float64(cpu.Microseconds()) / float64(len(all))
	}
	if busy, ok := mach1.busyShare(mach0); ok && machOK && len(all) > 0 {
		res.MachineCPUs = mach1.cpus
		res.MachineBusyPct = 100 * busy
		res.MachineCPUPerReqUS = busy * float64(mach1.cpus) * float64(elapsed.Microseconds()) / float64(len(all))
	}
	return res, nil
}

// machineCPU is read from /proc/stat: the busy and total CPU time of all
// the machine's CPUs together (its "cpu" line, in clock ticks since boot)
// and how many CPUs it has (its "cpuN" lines).
type machineCPU struct {
	busy, total uint64
	cpus        int
}

// readMachineCPU reads /proc/stat; ok is false where there is none.
func readMachineCPU() (machineCPU, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, false
	}
	return parseProcStat(b)
}

// parseProcStat reads the aggregate "cpu" line (user nice system idle
// iowait irq softirq steal ...) and counts the "cpuN" lines. Busy is user,
// nice, system, irq and softirq; idle and iowait are idle (waiting on the
// disk leaves the CPU free); steal, time the hypervisor gave to others,
// counts in neither, so a crowded host does not read as a busy one. guest
// time is already inside user.
func parseProcStat(b []byte) (machineCPU, bool) {
	var m machineCPU
	found := false
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			continue
		}
		if f[0] != "cpu" {
			m.cpus++
			continue
		}
		if len(f) < 8 {
			return machineCPU{}, false
		}
		var v [7]uint64
		for i := range v {
			n, err := strconv.ParseUint(f[1+i], 10, 64)
			if err != nil {
				return machineCPU{}, false
			}
			v[i] = n
		}
		user, nice, system, idle, iowait, irq, softirq := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
		m.busy = user + nice + system + irq + softirq
		m.total = m.busy + idle + iowait
		found = true
	}
	return m, found && m.cpus > 0
}

// busyShare is the share of the machine's CPU time that was busy between
// an earlier reading and m.
func (m machineCPU) busyShare(earlier machineCPU) (float64, bool) {
	if m.total <= earlier.total || m.busy < earlier.busy {
		return 0, false
	}
	return float64(m.busy-earlier.busy) / float64(m.total-earlier.total), true
}

// processCPU is the user and system CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func percentiles(d []time.Duration) (p50, p90, p99, max float64) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	at := func(q float64) float64 { return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000 }
	return at(0.50), at(0.90), at(0.99), float64(d[len(d)-1].Microseconds()) / 1000
}

func send(client *fasthttp.Client, url string, body []byte, h http.Header) (int, []byte, error) {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod(fasthttp.MethodPost)
	for k, vs := range h {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.SetBodyRaw(body)
	if err := client.Do(req, resp); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode(), nil, nil
}

func printResult(w io.Writer, r benchResult) {
	mode := fmt.Sprintf("closed loop, %d connections", r.Conns)
	if r.Mode == "open" {
		mode = fmt.Sprintf("open loop, %.0f requests/s scheduled, up to %d in flight", r.Rate, r.Conns)
	}
	fmt.Fprintf(w, "%s\n  %s, %d-byte bodies, %.0f%% duplicate ids\n", r.Target, mode, r.BodyBytes, 100*r.DupShare)
	fmt.Fprintf(w, "  %d requests in %.1fs: %.0f requests/s; this process used %.0f µs of CPU per request\n", r.Requests, r.Seconds, r.Throughput, r.CPUPerReqUS)
	if r.MachineCPUs > 0 {
		fmt.Fprintf(w, "  the machine's %d CPUs were %.0f%% busy: %.0f µs of machine CPU per request (the kernel's network and disk work included)\n",
			r.MachineCPUs, r.MachineBusyPct, r.MachineCPUPerReqUS)
	}
	fmt.Fprintf(w, "  latency p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n", r.P50MS, r.P90MS, r.P99MS, r.MaxMS)
	var codes []string
	for code, n := range r.Status {
		codes = append(codes, fmt.Sprintf("%s: %d", code, n))
	}
	slices.Sort(codes)
	fmt.Fprintf(w, "  status %s; errors %d\n", strings.Join(codes, ", "), r.Errors)
	if r.Commits > 0 {
		fmt.Fprintf(w, "  storage: %d commits, %.1f writes each, %.2f pages written per accepted request\n", r.Commits, r.WritesPerCommit, r.PagesPerEvent)
	}
	if r.Backlog > 0 {
		if r.BacklogDrainSec > 0 {
			fmt.Fprintf(w, "  backlog: %d events waiting at start-up reached the sink %.1fs after start (%.0f deliveries/s) while the load above ran\n",
				r.Backlog, r.BacklogDrainSec, float64(r.Backlog)/r.BacklogDrainSec)
		} else {
			fmt.Fprintf(w, "  backlog: %d events waiting at start-up did NOT all reach the sink within 60 s of the load's end\n", r.Backlog)
		}
	}
	if r.Delivered > 0 {
		fmt.Fprintf(w, "  at the sink: %d events (%d delivered again), send→sink p50 %.1f ms, p99 %.1f ms, max %.1f ms; last one %.2fs after the load stopped\n",
			r.Delivered, r.Repeats, r.DeliveryP50MS, r.DeliveryP99MS, r.DeliveryMaxMS, r.DeliveryLagSec)
	}
}

// benchCompare starts, in this process, a verify-only Fiber server with
// hookbox's server settings and a real hookbox (data in a temp dir, one
// route to a local sink), drives both with the same load, and prints the
// ratio. The machine is shared, so the ratio is the figure that counts.
func benchCompare(ctx context.Context, o benchOptions, stdout io.Writer) ([]benchResult, error) {
	tuneRuntime() // the runtime settings serve uses, for both servers alike
	dir, err := os.MkdirTemp("", "hookbox-bench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	secret := "bench-" + randomEventID()
	if o.provider == "standard" || o.provider == "bigcommerce" {
		secret = "whsec_YmVuY2gtc2VjcmV0LWJlbmNoLXNlY3JldA=="
	}

	statusPassword := randomEventID()
	sink := newBenchSink()
	sinkLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	sinkSrv := &fasthttp.Server{Handler: sink.handle, ReadTimeout: web.ReadTimeout, WriteTimeout: web.WriteTimeout}
	go sinkSrv.Serve(sinkLn)
	defer func() { // without waiting for hookbox's idle keep-alive connections to time out
		sctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		sinkSrv.ShutdownWithContext(sctx)
	}()

	port, err := pickPort()
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
`, filepath.Join(dir, "data"), max(app.DefaultMaxConnections, 2*o.conns), statusPassword, o.provider, secret, sinkLn.Addr())
	if o.provider == "hmac" { // its id and signature header come from the config
		cfgText = strings.Replace(cfgText, "[[destination]]", "id = \"{body.id}\"\nsignature_header = \"X-Signature\"\n[[destination]]", 1)
	}
	if !o.deliver {
		cfgText = cfgText[:strings.Index(cfgText, "[[destination]]")]
	}
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		return nil, err
	}
	cfg, err := app.LoadConfig(cfgPath, nil)
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
	verifyOnly := fiber.New(fiber.Config{BodyLimit: cfg.Server.MaxBodyBytes, ReadTimeout: web.ReadTimeout,
		WriteTimeout: web.WriteTimeout, IdleTimeout: web.IdleTimeout, ReadBufferSize: web.ReadBufferSize,
		DisableStartupMessage: true})
	verifyOnly.Post("/in/:source", func(c *fiber.Ctx) error {
		in := &app.Inbound{Body: c.Request().Body(), Header: make([]app.HeaderField, 0, c.Request().Header.Len())}
		c.Request().Header.VisitAll(func(k, v []byte) {
			in.Header = append(in.Header, app.HeaderField{Name: string(k), Value: string(v)})
		})
		if _, err := src.Verify(provider.Request{Body: in.Body, Header: in, URL: src.URL}, time.Now()); err != nil {
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
	// (b) the real hookbox, in this process, on its own data dir, with
	// -backlog events already waiting for the sink.
	if o.backlog > 0 {
		if err := preloadBacklog(ctx, filepath.Join(dir, "data"), o, sg, sink); err != nil {
			return nil, fmt.Errorf("backlog: %w", err)
		}
	}
	durable, err := benchNode(ctx, o, cfgPath, port, statusPassword, sg, sink, o.cpuProf)
	if err != nil {
		return nil, err
	}
	durable.Target = "hookbox: verify, dedupe, fsync'd commit, route to a local sink"
	if !o.deliver {
		durable.Target = "hookbox: verify, dedupe, fsync'd commit (no route)"
	}
	results := []benchResult{ceiling, durable}
	if o.store == app.BackendPostgres {
		dbURL, drop, err := benchSchema(ctx, o.databaseURL)
		if err != nil {
			return nil, err
		}
		defer drop()
		pgPort, err := pickPort()
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
		pg.Target = strings.Replace(durable.Target, "hookbox:", "hookbox on PostgreSQL ("+postgres.MaskURL(o.databaseURL)+"):", 1)
		results = append(results, pg)
	}
	for _, r := range results {
		printResult(stdout, r)
	}
	fmt.Fprintf(stdout, "ratio: hookbox answers %.1f%% of the verify-only ceiling (%.0f / %.0f requests/s); p99 %.2f ms vs %.2f ms\n",
		100*durable.Throughput/ceiling.Throughput, durable.Throughput, ceiling.Throughput, durable.P99MS, ceiling.P99MS)
	if len(results) > 2 {
		pg := results[2]
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
func benchNode(ctx context.Context, o benchOptions, cfgPath string, port int, statusPassword string, sg *signer, sink *benchSink, prof string) (benchResult, error) {
	started := time.Now()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serve(sctx, cfgPath, slog.New(slog.NewTextHandler(io.Discard, nil))) }()
	defer func() { stop(); <-served }()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case err := <-served: // say why at once, e.g. the port was taken
			served <- err // for the deferred wait
			return benchResult{}, fmt.Errorf("hookbox did not start: %w", err)
		default:
		}
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return benchResult{}, errors.New("hookbox did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}

	sink.reset()
	if prof != "" {
		stopProf, err := startCPUProfile(prof)
		if err != nil {
			return benchResult{}, err
		}
		defer stopProf()
	}
	lctx := ctx
	if o.backlog > 0 { // the load lasts while the backlog drains
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
		return benchResult{}, err
	}
	durable, err := loadRun(lctx, o, base+"/in/bench", sg)
	if err != nil {
		return benchResult{}, fmt.Errorf("hookbox: %w", err)
	}
	after, err := scrapeCommits(base, statusPassword)
	if err != nil {
		return benchResult{}, err
	}
	if commits := after[0] - before[0]; commits > 0 && durable.Status["200"] > 0 {
		durable.Commits = int(commits)
		durable.WritesPerCommit = (after[1] - before[1]) / commits
		durable.PagesPerEvent = (after[2] - before[2]) / float64(durable.Status["200"])
	}
	if o.backlog > 0 && durable.Requests == 0 {
		return benchResult{}, errors.New("the backlog drained before the load was measured: use a larger -backlog or a shorter -warmup")
	}
	loadEnd := time.Now()
	want := durable.Status["200"]
	for deadline := time.Now().Add(60 * time.Second); o.deliver && sink.count() < want && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	durable.Delivered = sink.count()
	sink.mu.Lock()
	durable.Repeats = sink.repeats
	sink.mu.Unlock()
	durable.DeliveryP50MS, durable.DeliveryP99MS, durable.DeliveryMaxMS, durable.DeliveryLagSec = sink.latencies(loadEnd)
	if o.backlog > 0 {
		durable.Backlog = o.backlog
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
	schema := "hookbox_bench_" + strings.TrimPrefix(randomEventID(), "test-")[:12]
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

// preloadBacklog stores o.backlog events routed to the sink in the data
// dir hookbox is about to open, as if accepted while the sink was away.
func preloadBacklog(ctx context.Context, dataDir string, o benchOptions, sg *signer, sink *benchSink) error {
	db, err := storage.Open(dataDir)
	if err != nil {
		return err
	}
	defer db.Close()
	sink.expectBacklog(o.backlog)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(o.backlog) && ctx.Err() == nil; i = next.Add(1) {
				now := time.Now()
				id := backlogPrefix + strconv.FormatInt(i, 10)
				body, _, err := sg.request(id, o.size, now)
				if err == nil {
					e := &app.Event{Source: sg.src.Name, ID: id, Topic: "bench/event", ReceivedAt: now, Body: body}
					_, err = db.Accept(ctx, e, now.Add(time.Hour), &app.Plan{Direct: []string{"sink"}})
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

// startCPUProfile writes a CPU profile to path until the returned func runs.
func startCPUProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// pickPort returns a port that was free a moment ago on 127.0.0.1, so that
// a config can name both listen and public_url before the server starts.
// It is picked below the kernel's ephemeral range: a port from
// 127.0.0.1:0 comes out of that range, where any outgoing connection (the
// load's, the sink's, another program's) may take it before hookbox binds
// it, and once in CI one did. Below the range only an explicit bind takes
// a port.
func pickPort() (int, error) {
	const lowest = 10000
	if top := ephemeralLow(); top > lowest {
		for range 200 {
			port := lowest + rand.IntN(top-lowest)
			ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
			if err == nil {
				ln.Close()
				return port, nil
			}
		}
	}
	// No room below the range on this machine: take one from it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ephemeralLow is the first port of the range the kernel hands to outgoing
// connections and to listeners on port 0; 32768, Linux's default, when the
// kernel does not say.
func ephemeralLow() int {
	var low int
	if raw, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if _, err := fmt.Sscan(string(raw), &low); err == nil {
			return low
		}
	}
	return 32768
}

// benchSink is the local destination of -compare: it answers 200 and
// notes how long each event took from its send to here. It runs on
// fasthttp and reads only the two fields it needs, so that the share of
// the machine it takes from hookbox in this one-machine run stays small; a
// merchant's endpoint runs elsewhere.
type benchSink struct {
	mu      sync.Mutex
	lat     []time.Duration
	last    time.Time
	seen    map[string]bool
	repeats int // deliveries of an event the sink already had
	// Events of -backlog, counted apart from the load's.
	backlogWant int
	backlogSeen map[string]bool
	backlogAt   time.Time
	backlogDone chan struct{}
}

func newBenchSink() *benchSink {
	return &benchSink{seen: map[string]bool{}, backlogSeen: map[string]bool{}, backlogDone: make(chan struct{})}
}

// backlogPrefix starts the ids of the events -backlog stores before start-up.
const backlogPrefix = "backlog-"

func (s *benchSink) expectBacklog(n int) { s.mu.Lock(); s.backlogWant = n; s.mu.Unlock() }

func (s *benchSink) backlogLast() time.Time { s.mu.Lock(); defer s.mu.Unlock(); return s.backlogAt }

func (s *benchSink) handle(c *fasthttp.RequestCtx) {
	id, sent, ok := sinkFields(c.PostBody())
	if !ok {
		c.SetStatusCode(fasthttp.StatusBadRequest)
		return
	}
	now := time.Now()
	s.mu.Lock()
	if bytes.HasPrefix(id, []byte(backlogPrefix)) {
		if !s.backlogSeen[string(id)] {
			s.backlogSeen[string(id)] = true
			s.backlogAt = now
			if len(s.backlogSeen) == s.backlogWant {
				close(s.backlogDone)
			}
		}
	} else if s.seen[string(id)] {
		s.repeats++
	} else {
		s.seen[string(id)] = true
		s.lat = append(s.lat, now.Sub(time.Unix(0, sent)))
		s.last = now
	}
	s.mu.Unlock()
}

// sinkFields finds "id" and "sent_ns" in a body made by signer.request.
func sinkFields(b []byte) (id []byte, sent int64, ok bool) {
	const idField, sentField = `{"id":"`, `"sent_ns":`
	if !bytes.HasPrefix(b, []byte(idField)) {
		return nil, 0, false
	}
	id = b[len(idField):]
	end := bytes.IndexByte(id, '"')
	i := bytes.Index(b, []byte(sentField))
	if end < 0 || i < 0 {
		return nil, 0, false
	}
	id = id[:end]
	num := b[i+len(sentField):]
	if j := bytes.IndexByte(num, ','); j >= 0 {
		num = num[:j]
	}
	sent, err := strconv.ParseInt(string(num), 10, 64)
	return id, sent, err == nil
}

func (s *benchSink) reset() {
	s.mu.Lock()
	s.lat, s.seen, s.repeats = nil, map[string]bool{}, 0
	s.mu.Unlock()
}

func (s *benchSink) count() int { s.mu.Lock(); defer s.mu.Unlock(); return len(s.lat) }

func (s *benchSink) latencies(loadEnd time.Time) (p50, p99, max, lagSec float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := slices.Clone(s.lat)
	p50, _, p99, max = percentiles(d)
	if s.last.After(loadEnd) {
		lagSec = s.last.Sub(loadEnd).Seconds()
	}
	return
}
