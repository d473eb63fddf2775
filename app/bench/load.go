package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"hookbox/app"
	"hookbox/app/provider"
)

// signer makes request i: a body of the wanted size carrying the event id
// wherever the providers look for one, signed for the source.
type signer struct {
	src     *app.Source
	headers []string // headers an id template reads
}

func newSigner(src *app.Source) *signer {
	return &signer{src: src, headers: src.ID.Headers()}
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

// loadRun drives url: closed loop with o.Conns connections, or open loop at
// o.Rate with latency measured from each request's scheduled time.
func loadRun(ctx context.Context, o Options, url string, sg *signer) (Result, error) {
	client := &fasthttp.Client{MaxConnsPerHost: o.Conns, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second,
		MaxIdleConnDuration: time.Minute}
	res := Result{Target: url, Mode: "closed", Conns: o.Conns, BodyBytes: o.Size, DupShare: o.Dup, Status: map[string]int{}}
	if o.Rate > 0 {
		res.Mode, res.Rate = "open", o.Rate
	}
	// A probe: the target must answer before the clock starts.
	body, h, err := sg.request(randomID(), o.Size, time.Now())
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
		lats     = make([][]time.Duration, o.Conns)
		statuses = make([]map[int]int, o.Conns)
		errs     atomic.Int64
		counted  atomic.Int64
	)
	nextID := func(r *rand.Rand) string {
		if o.Dup > 0 && r.Float64() < o.Dup {
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
		if o.Dup > 0 {
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
	jobs := make(chan job, o.Conns)
	var wg sync.WaitGroup
	for w := range o.Conns {
		statuses[w] = map[int]int{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for {
				var at time.Time
				if o.Rate > 0 {
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
				body, h, err := sg.request(nextID(r), o.Size, at)
				if err != nil {
					errs.Add(1)
					continue
				}
				code, _, err := send(client, url, body, h)
				lat := time.Since(at)
				if !measure.Load() {
					continue
				}
				if o.Requests > 0 && counted.Add(1) > int64(o.Requests) {
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
	if o.Rate > 0 {
		go func() { // the schedule: one request every 1/rate, whatever the server does
			defer close(jobs)
			interval := time.Duration(float64(time.Second) / o.Rate)
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
	time.Sleep(o.Warmup)
	measure.Store(true)
	start, cpu0 := time.Now(), processCPU()
	mach0, machOK := readMachineCPU()
	select {
	case <-time.After(o.Duration):
	case <-ctx.Done():
	}
	cancel()
	elapsed, cpu := time.Since(start), processCPU()-cpu0
	mach1, _ := readMachineCPU()
	wg.Wait()

	var all []time.Duration
	for w := range o.Conns {
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
