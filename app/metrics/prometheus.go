// Package metrics exports hookbox to Prometheus: Prometheus hears the
// domain's events (it is an app.Metrics) and, when scraped, reads the
// state of the store, of its commits and of the served certificate. The
// domain never imports it; the command line wires it, the web package
// serves it at /metrics.
package metrics

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"hookbox/app"
)

// Prometheus is hookbox's metrics in a Prometheus registry.
type Prometheus struct {
	// Registry holds every metric; Handler serves it.
	Registry *prometheus.Registry

	requests      *prometheus.CounterVec
	deliveries    *prometheus.CounterVec
	ingest        prometheus.Histogram
	sendTime      *prometheus.HistogramVec
	sweeps        *prometheus.CounterVec
	failedCommits prometheus.Counter
	filtered      *prometheus.CounterVec
	filterErrors  *prometheus.CounterVec
	upChecks      *prometheus.CounterVec
	upTaken       *prometheus.CounterVec
	quarantine    *prometheus.CounterVec
}

var _ app.Metrics = (*Prometheus)(nil)

// New builds the metrics of stats, with gauges read from store and from
// stats.Storage, and makes stats report to them (stats.Metrics).
func New(stats *app.Stats, store app.GaugeStore) *Prometheus {
	p := &Prometheus{Registry: prometheus.NewRegistry()}
	p.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookbox_requests_total",
		Help: "Webhook requests by source and outcome (accepted, duplicate, ping, rejected, invalid, failed); requests to unknown sources under source \"_unknown\", outcome \"not_found\"."}, []string{"source", "outcome"})
	p.deliveries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookbox_delivery_attempts_total",
		Help: "Delivery attempts by destination and outcome (delivered, retrying, dead)."}, []string{"destination", "outcome"})
	p.ingest = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "hookbox_ingest_seconds",
		Help:    "Time from request to answer for accepted and duplicate webhooks, including the durable commit.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)})
	p.sendTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "hookbox_delivery_seconds",
		Help: "Duration of delivery attempts by destination.", Buckets: prometheus.ExponentialBuckets(0.001, 2, 15)}, []string{"destination"})
	p.sweeps = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookbox_sweeps_total",
		Help: "Sweep runs by result (ok, failed)."}, []string{"result"})
	p.failedCommits = prometheus.NewCounter(prometheus.CounterOpts{Name: "hookbox_storage_failed_commits_total",
		Help: "Commits of the data file that failed (a full or failing disk); their writes were refused."})
	p.filtered = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookbox_route_filtered_total",
		Help: "Accepted events of a route's source and topics that its filter turned away (it said no), by route."}, []string{"route"})
	p.filterErrors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookbox_route_filter_errors_total",
		Help: "Accepted events whose route filter failed (a missing field, a wrong type, the cost limit) and so did not take the route, by route."}, []string{"route"})
	p.upChecks = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookbox_upstream_checks_total",
		Help: "Checks of a provider's side ([source.upstream]) by source and result (ok, failed, busy: another ran)."}, []string{"source", "result"})
	p.upTaken = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookbox_upstream_recovered_total",
		Help: "What upstream checks recovered by source and action: fetched (events taken in from the provider's API), redelivered (deliveries the provider was asked to send again)."}, []string{"source", "action"})
	p.quarantine = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hookbox_quarantine_total",
		Help: "Requests refused for their signature by what the source's quarantine did: kept, limited (past its rate, or the address's share: refused and only counted), full (the store refused it), failed (the store's write failed); and recovered, taken in once a fixed secret verified them."}, []string{"source", "outcome"})
	gauge := func(name, help string, f func() (int, error)) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			n, err := f()
			if err != nil {
				return -1
			}
			return float64(n)
		})
	}
	failing := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "hookbox_storage_failing",
		Help: "1 while commits of the data file fail: webhooks get 503, deliveries wait."}, func() float64 {
		if stats.Storage.Failing() {
			return 1
		}
		return 0
	})
	p.Registry.MustRegister(p.requests, p.deliveries, p.ingest, p.sendTime, p.sweeps,
		gauge("hookbox_dead_deliveries", "Dead deliveries waiting for a replay.", func() (int, error) { return store.CountDead(context.Background()) }),
		gauge("hookbox_pending_deliveries", "Deliveries waiting to be sent (due now or later).", func() (int, error) { return store.CountPending(context.Background()) }),
		gauge("hookbox_poison_records", "Records in the data file that could not be decoded and were set aside (see the overview).",
			func() (int, error) { _, n, err := store.Poisoned(context.Background(), 0); return n, err }),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		failing, p.failedCommits, p.filtered, p.filterErrors, p.upChecks, p.upTaken, p.quarantine)
	counter := func(name, help string, pick func(commits, writes, pages uint64) uint64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 {
			return float64(pick(store.CommitCounts()))
		})
	}
	p.Registry.MustRegister(
		counter("hookbox_commits_total", "Group commits (each one bbolt transaction and its fsyncs).",
			func(c, _, _ uint64) uint64 { return c }),
		counter("hookbox_commit_writes_total", "Writes (accepts, attempts, ...) carried by group commits; divided by hookbox_commits_total, the group size.",
			func(_, w, _ uint64) uint64 { return w }),
		counter("hookbox_pages_written_total", "bbolt pages written by write transactions.",
			func(_, _, p uint64) uint64 { return p }))

	stats.Metrics = p
	return p
}

// Handler serves the metrics in Prometheus's text format (/metrics).
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{})
}

// Request counts one request to source by its outcome.
func (p *Prometheus) Request(source, outcome string) {
	p.requests.WithLabelValues(source, outcome).Inc()
}

// Ingest observes the time to answer an accepted or duplicate webhook.
func (p *Prometheus) Ingest(took time.Duration) { p.ingest.Observe(took.Seconds()) }

// Attempt counts one delivery attempt to dest by its outcome, and
// observes its duration.
func (p *Prometheus) Attempt(dest, outcome string, took time.Duration) {
	p.deliveries.WithLabelValues(dest, outcome).Inc()
	p.sendTime.WithLabelValues(dest).Observe(took.Seconds())
}

// Sweep counts one sweep run by its result.
func (p *Prometheus) Sweep(result string) { p.sweeps.WithLabelValues(result).Inc() }

// CommitFailed counts one failed commit of the store.
func (p *Prometheus) CommitFailed() { p.failedCommits.Inc() }

// RouteFilter counts one accepted event that route's filter turned away:
// outcome "error" when it failed, else "filtered".
func (p *Prometheus) RouteFilter(route, outcome string) {
	if outcome == "error" {
		p.filterErrors.WithLabelValues(route).Inc()
		return
	}
	p.filtered.WithLabelValues(route).Inc()
}

// Upstream counts one upstream check of source by result, and what it
// recovered.
func (p *Prometheus) Upstream(source, result string, fetched, redelivered int) {
	p.upChecks.WithLabelValues(source, result).Inc()
	if fetched > 0 {
		p.upTaken.WithLabelValues(source, "fetched").Add(float64(fetched))
	}
	if redelivered > 0 {
		p.upTaken.WithLabelValues(source, "redelivered").Add(float64(redelivered))
	}
}

// Quarantine counts one refused request of source by what the quarantine
// did with it, or one recovered from it.
func (p *Prometheus) Quarantine(source, outcome string) {
	p.quarantine.WithLabelValues(source, outcome).Inc()
}
