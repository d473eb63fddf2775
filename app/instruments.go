package app

import "time"

// Metrics hears what the domain does, for an exporter outside it
// (app/metrics exports it to Prometheus). The domain names the outcomes;
// an exporter only counts them. Its methods are called on the hot path,
// from many goroutines: they must be cheap and must not block.
type Metrics interface {
	// Request counts one request to source that ended in outcome (an
	// Outcome's name; "not_found" under UnknownSource).
	Request(source, outcome string)
	// Ingest observes the time to answer an accepted or duplicate webhook,
	// its durable commit included.
	Ingest(took time.Duration)
	// Attempt counts one delivery attempt to dest that ended in outcome
	// (delivered, retrying, dead), and observes how long it took.
	Attempt(dest, outcome string, took time.Duration)
	// Sweep counts one sweep run by its result (ok, failed).
	Sweep(result string)
	// CommitFailed counts one commit of the store that failed.
	CommitFailed()
	// RouteFilter counts one accepted event that route's filter turned
	// away, by outcome: "filtered" (it said no) or "error" (it failed).
	RouteFilter(route, outcome string)
	// Upstream counts one upstream check of source by result (ok, failed,
	// busy), with the events it took in and the deliveries it asked again.
	Upstream(source, result string, fetched, redelivered int)
	// Quarantine counts one request source refused for its signature by
	// what became of it in the quarantine (QuarantineOutcomes), or one
	// taken in from it ("recovered").
	Quarantine(source, outcome string)
}

// noMetrics is the Metrics of a Stats that has none: it hears nothing.
type noMetrics struct{}

func (noMetrics) Request(string, string)                {}
func (noMetrics) Ingest(time.Duration)                  {}
func (noMetrics) Attempt(string, string, time.Duration) {}
func (noMetrics) Sweep(string)                          {}
func (noMetrics) CommitFailed()                         {}
func (noMetrics) RouteFilter(string, string)            {}
func (noMetrics) Upstream(string, string, int, int)     {}
func (noMetrics) Quarantine(string, string)             {}

var _ Metrics = noMetrics{}
