package app

import (
	"context"
	"sort"
	"sync"
	"time"
)

// CountHours is how many hours of counts the status page shows: the
// current one and the 23 before it. The sweep forgets older ones.
const CountHours = 24

// Stats counts what happened per hour for the status page and tells its
// Metrics of the same events (app/metrics exports them to Prometheus, with
// gauges that read the store). Its recording methods do nothing on a
// nil *Stats, so components work without one in tests. The hourly counts
// are the store's (CountStore): durable, the same after a restart and, on
// PostgreSQL, summed over every node; so are the rows per source,
// destination and route (Tables), and a destination's health (failing
// since, next try), with what this node's dispatcher noted and has not
// stored yet.
type Stats struct {
	now   func() time.Time
	store StatsStore

	mu      sync.Mutex
	sources map[string]bool // the configured names: the rows come from the store
	dests   map[string]bool // the configured names: the rows come from the store
	routes  []*Route        // the debounced and filtered routes, in config order
	// noted is the dispatcher's view of a destination's health not
	// stored yet.
	noted map[string]DestinationHealth

	// Storage follows whether commits succeed (bboltstore.DB.OnCommit).
	Storage *StorageHealth

	// Metrics hears of each request, attempt, sweep and failed commit
	// (nil: nobody does). Set it before the components that record start.
	Metrics Metrics
}

// SourceInfo is what the overview shows per source: counts of the last
// CountHours hours and its last accepted event, from the store.
// JSON: snake_case, a time that never happened left out (see docs/API.md).
type SourceInfo struct {
	Name      string    `json:"name"`
	LastEvent time.Time `json:"last_event,omitzero"`
	Accepted  uint64    `json:"accepted"`
	Duplicate uint64    `json:"duplicate"`
	Rejected  uint64    `json:"rejected"`
	Invalid   uint64    `json:"invalid"`
}

// DestInfo is what the overview shows per destination: counts of the
// last CountHours hours and its last failed and delivering attempts, from
// the store.
// JSON: snake_case, a time that never happened left out (see docs/API.md).
type DestInfo struct {
	Name      string    `json:"name"`
	Delivered uint64    `json:"delivered"`
	Failed    uint64    `json:"failed_attempts"`
	LastError string    `json:"last_error,omitempty"`
	LastAt    time.Time `json:"last_error_at,omitzero"`
	// LastDelivered is its last attempt that delivered, from the store:
	// with LastAt, what the page says of it after a restart, before the
	// dispatcher has tried it again.
	LastDelivered time.Time `json:"last_delivered_at,omitzero"`
	// FailingSince is when its attempts began to fail (zero: its last one
	// worked); NextTry is when it is tried next, by a retry that falls due
	// or a probe (zero: not known). Stored (DestinationHealth).
	FailingSince time.Time `json:"failing_since,omitzero"`
	NextTry      time.Time `json:"next_try,omitzero"`
	// Backlog is how many of its deliveries are not done yet (counted up
	// to MaxBacklogCount), filled by the reader from the store: the
	// overview's and /api/v1/stats' same figure.
	Backlog int `json:"backlog"`
}

// MaxBacklogCount bounds the count of a destination's backlog (a scan).
const MaxBacklogCount = 100000

// RouteInfo is what the overview shows per debounced or filtered route:
// counts of the last CountHours hours, from the store.
type RouteInfo struct {
	Name                                      string
	Received, Merged, Deferred, Unkeyed, Sent uint64
	// Debounced: the route has a key (the counts above are its steps).
	Debounced bool
	// Filtered and FilterErrors are the events of its source and topics
	// its filter turned away: it said no, or it failed.
	Filtered, FilterErrors uint64
}

// Reduction is the share of the events that took the route that did not
// go out on their own, or -1 with none.
func (r RouteInfo) Reduction() float64 {
	if r.Received == 0 {
		return -1
	}
	return 1 - float64(r.Sent+r.Unkeyed)/float64(r.Received)
}

// Tables are the overview's rows per source, destination and debounced
// route, by name.
type Tables struct {
	Sources      []SourceInfo
	Destinations []DestInfo
	Routes       []RouteInfo
}

// NewStats builds the counters for cfg, read from store.
func NewStats(cfg *Config, store StatsStore, now func() time.Time) *Stats {
	s := &Stats{now: now, store: store, noted: map[string]DestinationHealth{}, Storage: newStorageHealth(now)}
	s.Storage.failedCommit = func() { s.metrics().CommitFailed() }
	s.Apply(cfg)
	return s
}

// Apply makes the rows those of cfg's sources, destinations and routes; a
// destination kept by name keeps the dispatcher's noted view of it, a
// removed one's is forgotten.
func (s *Stats) Apply(cfg *Config) {
	var routes []*Route
	for _, rt := range cfg.Routes {
		if rt.Key != nil || rt.Filter != nil {
			routes = append(routes, rt)
		}
	}
	sources := map[string]bool{}
	for _, src := range cfg.Sources {
		sources[src.Name] = true
	}
	dests := map[string]bool{}
	for _, d := range cfg.Destinations {
		dests[d.Name] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for name := range s.noted {
		if !dests[name] {
			delete(s.noted, name)
		}
	}
	s.sources, s.dests, s.routes = sources, dests, routes
}

// metrics is s's Metrics, one that hears nothing when it has none.
func (s *Stats) metrics() Metrics {
	if s.Metrics == nil {
		return noMetrics{}
	}
	return s.Metrics
}

// Inbound records the outcome of one request to a source, and how long it
// took to answer. An accepted event is counted by the store in its commit;
// every other outcome is handed to the store's AddCounts.
func (s *Stats) Inbound(source string, o Outcome, took time.Duration) {
	if s == nil {
		return
	}
	now := s.now()
	m := s.metrics()
	m.Request(source, o.String())
	if o == Accepted || o == Duplicate {
		m.Ingest(took)
	}
	if o != Accepted {
		var c Counts
		c[KindReceived] = 1
		switch o {
		case Duplicate:
			c[KindDuplicate] = 1
		case Rejected:
			c[KindRejected] = 1
		}
		s.store.AddCounts(now, c)
	}
	// source is a configured name (the receiver's): an unknown one is
	// counted by Unknown.
	switch o {
	case Duplicate:
		s.store.AddNamed(now, SourceDuplicate, source, 1)
	case Rejected:
		s.store.AddNamed(now, SourceRejected, source, 1)
	case Invalid:
		s.store.AddNamed(now, SourceInvalid, source, 1)
	}
}

// Filtered tells the metrics of the routes an accepted event's filters
// turned away (the store counts them in the accept's commit).
func (s *Stats) Filtered(notes []FilterNote) {
	if s == nil {
		return
	}
	for _, n := range notes {
		if n.Err != "" {
			s.metrics().RouteFilter(n.Route, "error")
		} else {
			s.metrics().RouteFilter(n.Route, "filtered")
		}
	}
}

// UnknownSource is the one label under which requests to sources that are
// not configured are counted: no source name can start with '_'.
const UnknownSource = "_unknown"

// Quarantine counts one refused request of source by what the quarantine
// did with it, or one recovered from it (the metrics only).
func (s *Stats) Quarantine(source, outcome string) {
	if s == nil {
		return
	}
	s.metrics().Quarantine(source, outcome)
}

// Unknown records a request to a source that is not configured.
func (s *Stats) Unknown() {
	if s == nil {
		return
	}
	s.metrics().Request(UnknownSource, "not_found")
}

// Attempt records one delivery attempt's outcome (the store counts it per
// hour when it records the attempt).
func (s *Stats) Attempt(dest string, state DeliveryState, took time.Duration) {
	if s == nil {
		return
	}
	var outcome string
	switch state {
	case Delivered:
		outcome = "delivered"
	case Pending:
		outcome = "retrying"
	case Dead:
		outcome = "dead"
	}
	s.metrics().Attempt(dest, outcome, took)
	// The store counts the attempt, and keeps a failure as dest's last
	// error, when it records the attempt.
}

// DestState shows the dispatcher's view of dest's health until it is
// stored (HealthSaved).
func (s *Stats) DestState(dest string, view DestinationHealth) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dests[dest] {
		s.noted[dest] = view
	}
}

// HealthSaved tells that view of dest's health is stored: the page reads
// the store's from now on, unless a newer view was noted meanwhile.
func (s *Stats) HealthSaved(dest string, view DestinationHealth) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.noted[dest]; ok && n == view {
		delete(s.noted, dest)
	}
}

// Swept records a sweep run.
func (s *Stats) Swept(err error) {
	if s == nil {
		return
	}
	if err != nil {
		s.metrics().Sweep("failed")
		return
	}
	s.metrics().Sweep("ok")
}

// Hours returns the counts of each of the last CountHours hours, oldest
// first, the current hour last, as the store has them.
func (s *Stats) Hours(ctx context.Context) ([CountHours]Counts, error) {
	var out [CountHours]Counts
	now := s.now()
	cur := Hour(now)
	hs, err := s.store.HourlyCounts(ctx, HourStart(cur-CountHours+1), now)
	if err != nil {
		return out, err
	}
	for _, h := range hs {
		if i := CountHours - 1 - (cur - Hour(h.Hour)); i >= 0 && i < CountHours {
			out[i].Add(h.Counts)
		}
	}
	return out, nil
}

// Sum adds up the counts of the last n hours of hs (the current one
// included).
func Sum(hs [CountHours]Counts, n int) Counts {
	var out Counts
	for _, c := range hs[CountHours-min(n, CountHours):] {
		out.Add(c)
	}
	return out
}

// Series returns kind k of each hour of hs.
func Series(hs [CountHours]Counts, k Kind) [CountHours]uint64 {
	var out [CountHours]uint64
	for i, c := range hs {
		out[i] = c[k]
	}
	return out
}

// Counts sums each kind over the last d (whole hours, the current one
// included); a store that cannot be read gives zeros.
func (s *Stats) Counts(d time.Duration) Counts {
	hs, _ := s.Hours(context.Background())
	return Sum(hs, int(d/time.Hour))
}

// Hourly returns the counts of kind for each of the last 24 hours, oldest
// first, the current hour last; a store that cannot be read gives zeros.
func (s *Stats) Hourly(k Kind) [CountHours]uint64 {
	hs, _ := s.Hours(context.Background())
	return Series(hs, k)
}

// Tables returns the rows per source and destination (by name) and per
// debounced route (in config order): counts of the last CountHours hours,
// the current one included, and the last accepted event and failed
// attempt, from the store, so that a restart changes none of them. A
// store that cannot be read gives the rows with zeros, and the error.
func (s *Stats) Tables(ctx context.Context) (Tables, error) {
	now := s.now()
	counts, err := s.store.NamedCounts(ctx, HourStart(Hour(now)-CountHours+1), now)
	lasts, lerr := s.store.Lasts(ctx)
	if err == nil {
		err = lerr
	}
	stored, herr := s.store.DestinationHealths(ctx)
	if err == nil {
		err = herr
	}
	n := func(k NameKind, name string) uint64 { return counts[Named{Kind: k, Name: name}] }
	var t Tables
	s.mu.Lock()
	for name := range s.sources {
		t.Sources = append(t.Sources, SourceInfo{Name: name, LastEvent: lasts[Named{Kind: SourceAccepted, Name: name}].At,
			Accepted: n(SourceAccepted, name), Duplicate: n(SourceDuplicate, name),
			Rejected: n(SourceRejected, name), Invalid: n(SourceInvalid, name)})
	}
	for name := range s.dests {
		l := lasts[Named{Kind: DestFailed, Name: name}]
		h, ok := s.noted[name]
		if !ok {
			h = stored[name]
		}
		t.Destinations = append(t.Destinations, DestInfo{Name: name, Delivered: n(DestDelivered, name), Failed: n(DestFailed, name),
			LastError: l.Text, LastAt: l.At, LastDelivered: lasts[Named{Kind: DestDelivered, Name: name}].At,
			FailingSince: h.FailingSince, NextTry: h.NextTry})
	}
	routes := s.routes
	s.mu.Unlock()
	sort.Slice(t.Sources, func(i, j int) bool { return t.Sources[i].Name < t.Sources[j].Name })
	sort.Slice(t.Destinations, func(i, j int) bool { return t.Destinations[i].Name < t.Destinations[j].Name })
	for _, rt := range routes {
		name := rt.Name
		t.Routes = append(t.Routes, RouteInfo{Name: name, Received: n(RouteReceived, name), Merged: n(RouteMerged, name),
			Deferred: n(RouteDeferred, name), Unkeyed: n(RouteUnkeyed, name), Sent: n(RouteSent, name),
			Debounced: rt.Key != nil, Filtered: n(RouteFiltered, name), FilterErrors: n(RouteFilterErrors, name)})
	}
	return t, err
}

// DestHours returns, per configured destination, its delivered and its
// failed attempts in each of the last CountHours hours, oldest first, the
// current hour last: what the overview draws beside each destination. It
// reads the store's counts by name one hour at a time.
func (s *Stats) DestHours(ctx context.Context) (map[string]*[2][CountHours]uint64, error) {
	now := s.now()
	s.mu.Lock()
	out := make(map[string]*[2][CountHours]uint64, len(s.dests))
	for name := range s.dests {
		out[name] = &[2][CountHours]uint64{}
	}
	s.mu.Unlock()
	cur := Hour(now)
	for i := range CountHours {
		start := HourStart(cur - int64(CountHours-1-i))
		counts, err := s.store.NamedCounts(ctx, start, start)
		if err != nil {
			return out, err
		}
		for name, v := range out {
			v[0][i] = counts[Named{Kind: DestDelivered, Name: name}]
			v[1][i] = counts[Named{Kind: DestFailed, Name: name}]
		}
	}
	return out, nil
}

// LastAttemptFailed reports whether the destination's last recorded
// attempt failed (its last error is newer than its last delivery): after a
// restart the page says so until the dispatcher knows more.
func (d DestInfo) LastAttemptFailed() bool {
	return !d.LastAt.IsZero() && d.LastAt.After(d.LastDelivered)
}
