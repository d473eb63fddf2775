// Package receive is the receiver: it finds the source of a webhook,
// verifies its signature, identifies the event, plans its routes and
// accepts it in one durable commit of the store, before the answer.
package receive

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"hookbox/app"
	"hookbox/app/fields"
	"hookbox/app/provider"
)

// SourceStats is what the receiver keeps of one source since start for
// its rejection log line; the page's and API's counts are the store's
// (app.Stats, app.CountStore), the metrics' are app.Stats'.
type SourceStats struct {
	Rejected atomic.Uint64 // bad or missing signature
	warn     app.Throttle  // of the rejection log lines
}

// Receiver turns verified webhooks into durable events: verify, identify,
// remember once, store — and only then answer.
type Receiver struct {
	store app.IngestStore
	// routing is what the config in force says: one load per request,
	// swapped whole by Apply.
	routing atomic.Pointer[routing]
	// Now is the clock; tests replace it.
	Now func() time.Time
	// Logger receives accepted events and rejections (both rate-limited)
	// and storage failures.
	Logger *slog.Logger
	// Stats, when set, counts outcomes for the status page and metrics.
	Stats *app.Stats

	unknown app.Throttle // of the log lines about unknown sources
	accepts app.Throttle // of the log lines about accepted events
	// ruleWarn throttles the log lines about the rules of routes not in
	// rules (none in a config the receiver was given).
	ruleWarn app.Throttle
	// q keeps the requests refused for their signature (quarantine.go);
	// nil: none are kept.
	q *quarantine
}

// routing is the receiver's view of one config: never changed once in
// force. What is kept per source and per route (counters, throttles)
// carries over to the next config by name.
type routing struct {
	cfg       *app.Config
	sources   map[string]*app.Source
	stats     map[string]*SourceStats
	rules     map[string]*routeRules // of the routes with a filter or an order key
	retention time.Duration
}

// Log lines about bad requests are throttled: at most one a minute per
// source for rejections, one every ten seconds for unknown sources.
const (
	rejectedLogEvery = time.Minute
	unknownLogEvery  = 10 * time.Second
	// maxLoggedPath bounds the path of an unknown source in the log.
	maxLoggedPath = 96
)

// New builds a receiver for cfg's sources over store.
func New(cfg *app.Config, store app.IngestStore) *Receiver {
	r := &Receiver{
		store:  store,
		Now:    time.Now,
		Logger: slog.With("component", "receive"),
	}
	r.Apply(cfg)
	return r
}

// Apply puts cfg's sources and routes in force for the requests that
// start from now on; requests being handled finish with the config they
// began with. A source or route kept by name keeps its counters.
func (r *Receiver) Apply(cfg *app.Config) {
	old := r.routing.Load()
	rt := &routing{
		cfg:       cfg,
		sources:   make(map[string]*app.Source, len(cfg.Sources)),
		stats:     make(map[string]*SourceStats, len(cfg.Sources)),
		rules:     map[string]*routeRules{},
		retention: cfg.Retention.EventIDs,
	}
	var changed []string
	for _, s := range cfg.Sources {
		rt.sources[s.Name] = s
		rt.stats[s.Name] = &SourceStats{}
		if old != nil && old.stats[s.Name] != nil {
			rt.stats[s.Name] = old.stats[s.Name]
		}
		if was := old.source(s.Name); was != nil && secretsChanged(was, s) {
			changed = append(changed, s.Name)
		}
	}
	for _, route := range cfg.Routes {
		if route.Filter != nil || route.OrderKey != nil {
			rt.rules[route.Name] = &routeRules{}
			if old != nil && old.rules[route.Name] != nil {
				rt.rules[route.Name] = old.rules[route.Name]
			}
		}
	}
	r.routing.Store(rt)
	// A fixed secret may verify what the quarantine kept: check it again.
	for _, name := range changed {
		r.recheckSoon(name)
	}
}

// source returns rt's source called name, nil when none (or rt nil).
func (rt *routing) source(name string) *app.Source {
	if rt == nil {
		return nil
	}
	return rt.sources[name]
}

// SourceStats returns what is kept of source, or nil for an unknown source.
func (r *Receiver) SourceStats(source string) *SourceStats { return r.routing.Load().stats[source] }

// Receive verifies in as a webhook for source and, when genuine and new,
// stores it durably before returning Accepted.
// Counters and metrics take the configured name, never the request's
// string; an unknown source is counted under the one label app.UnknownSource
// and logged, throttled, with its path.
func (r *Receiver) Receive(ctx context.Context, source string, in *app.Inbound) (app.Result, error) {
	start := time.Now()
	rt := r.routing.Load()
	src, known := rt.sources[source]
	if !known {
		r.Stats.Unknown()
		if ok, held := r.unknown.Allow(r.Now(), unknownLogEvery); ok {
			// A copy, cut short: the request's string dies with its buffer.
			path := "/in/" + source[:min(len(source), maxLoggedPath)]
			r.Logger.Warn("webhook to an unknown source: check the URL set at the sender", "path", path,
				"client", in.Client, "unknown_since_last_line", held)
		}
		return app.Result{}, app.Errorf(app.ENOTFOUND, "unknown source")
	}
	res, err := r.receive(ctx, rt, src, in)
	r.Stats.Inbound(src.Name, outcomeOf(res, err), time.Since(start))
	return res, err
}

// storage is where r reports a write the store refused: nil without
// Stats (tests), whose methods then log every failure.
func (r *Receiver) storage() *app.StorageHealth {
	if r.Stats == nil {
		return nil
	}
	return r.Stats.Storage
}

// outcomeOf says what Receive did, for the stats.
func outcomeOf(res app.Result, err error) app.Outcome {
	switch app.ErrorCode(err) {
	case app.EUNAUTHORIZED:
		return app.Rejected
	case app.EINVALID:
		return app.Invalid
	case app.EUNAVAILABLE, app.EINTERNAL:
		if err != nil {
			return app.Failed
		}
	}
	return res.Outcome
}

func (r *Receiver) receive(ctx context.Context, rt *routing, src *app.Source, in *app.Inbound) (app.Result, error) {
	source := src.Name
	st := rt.stats[source]
	now := r.Now()
	v, err := src.Verify(provider.Request{Body: in.Body, Header: in, URL: src.URL}, now)
	if err != nil {
		st.Rejected.Add(1)
		r.warnRejected(st, source, err, now, in.Client)
		r.offer(rt, src, in, now, err)
		return app.Result{}, app.Errorf(app.EUNAUTHORIZED, "%s", err.Error())
	}
	if v.Ping {
		return app.Result{Outcome: app.Ping}, nil
	}
	id, topic, err := r.identify(src, v, in)
	if err != nil {
		return app.Result{}, err
	}
	return r.accept(ctx, rt, src, in, &app.Event{
		Source:     source,
		ID:         id,
		Topic:      topic,
		ReceivedAt: now,
		Header:     keptHeaders(in.Header),
		Body:       in.Body,
	})
}

// accept plans e's routes and accepts it in one commit: the way of every
// event once it is known genuine and identified.
func (r *Receiver) accept(ctx context.Context, rt *routing, src *app.Source, in *app.Inbound, e *app.Event) (app.Result, error) {
	source, id, topic, now := src.Name, e.ID, e.Topic, e.ReceivedAt
	plan := r.plan(rt, src, id, topic, in)
	if plan.Empty() && len(plan.Filtered) > 0 {
		e.Unrouted = app.UnroutedReason(plan.Filtered)
	}
	dup, err := r.store.Accept(ctx, e, now.Add(rt.retention), plan)
	if err != nil {
		r.storage().Refused(r.Logger, err, "source", source)
		return app.Result{}, app.Errorf(app.EUNAVAILABLE, "storage unavailable, retry later")
	}
	if dup {
		return app.Result{Outcome: app.Duplicate, ID: id}, nil
	}
	r.Stats.Filtered(plan.Filtered)
	r.logAccepted(now, source, id, topic, e.Seq)
	return app.Result{Outcome: app.Accepted, ID: id}, nil
}

// identify applies the source's id and topic overrides to the provider's
// verdict. Only called on a verified request: overrides may parse the body.
func (r *Receiver) identify(src *app.Source, v provider.Verdict, in *app.Inbound) (id, topic string, err error) {
	id, topic = v.ID, v.Topic
	if src.Topic == nil && src.ID == nil {
		return checkID(src, id, topic)
	}
	h := provider.Headers(src.Provider, in)
	if src.Topic != nil {
		// A topic the template cannot build is left empty, not refused.
		topic, _ = src.Topic.Render(fields.Input{Body: in.Body, Header: h, Source: src.Name, Topic: v.Topic})
	}
	if src.ID != nil {
		id, err = src.ID.Render(fields.Input{Body: in.Body, Header: h, Source: src.Name, Topic: topic})
		if err != nil {
			return "", "", app.Errorf(app.EINVALID, "no event id: source %s reads it with id = %q: %s", src.Name, src.ID.String(), err.Error())
		}
	}
	return checkID(src, id, topic)
}

// checkID refuses an event without a usable id, naming where the
// provider's rule looked for it.
func checkID(src *app.Source, id, topic string) (string, string, error) {
	switch {
	case id == "" && src.ID != nil:
		return "", "", app.Errorf(app.EINVALID, "no event id: source %s's id = %q gave an empty one", src.Name, src.ID.String())
	case id == "":
		return "", "", app.Errorf(app.EINVALID, "no event id: provider %s reads it from %s", src.Provider, provider.IDFrom(src.Provider))
	case len(id) > app.MaxIDLen:
		return "", "", app.Errorf(app.EINVALID, "event id longer than %d bytes", app.MaxIDLen)
	case len(topic) > app.MaxTopicLen:
		return "", "", app.Errorf(app.EINVALID, "topic longer than %d bytes", app.MaxTopicLen)
	}
	return id, topic, nil
}

// warnRejected logs rejections at most once a minute per source, so a flood
// of forged requests cannot flood the log; the counter has the full count.
func (r *Receiver) warnRejected(st *SourceStats, source string, err error, now time.Time, client string) {
	if ok, _ := st.warn.Allow(now, rejectedLogEvery); !ok {
		return
	}
	r.Logger.Warn("webhook rejected", "source", source, "reason", err.Error(), "client", client,
		"rejected_total", st.Rejected.Load())
}

// droppedHeaders are never stored: credentials of the sender's own systems
// and per-hop headers that mean nothing after this request.
var droppedHeaders = map[string]bool{
	"authorization": true, "proxy-authorization": true, "cookie": true,
	"connection": true, "keep-alive": true, "transfer-encoding": true, "te": true,
	"upgrade": true, "host": true, "content-length": true, "accept-encoding": true,
	"expect": true,
}

// keptHeaders returns the headers stored with an event.
func keptHeaders(h []app.HeaderField) []app.HeaderField {
	out := make([]app.HeaderField, 0, len(h))
	for _, f := range h {
		if !dropped(f.Name) {
			out = append(out, f)
		}
	}
	return out
}

// dropped reports whether a header named name is one of droppedHeaders,
// in any case, without making a lower-case copy of every name (the
// senders' names come canonical, and strings.ToLower allocated one per
// header of every accepted event).
func dropped(name string) bool {
	var lower [len("proxy-authorization")]byte // the longest dropped name
	if len(name) > len(lower) {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		lower[i] = c
	}
	return droppedHeaders[string(lower[:len(name)])]
}
