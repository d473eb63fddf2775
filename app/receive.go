package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"hookbox/app/fields"
	"hookbox/app/provider"
)

// MaxIDLen bounds an event id; longer ones are refused with 400.
const MaxIDLen = 512

// MaxTopicLen bounds a topic likewise. Providers that read it from the
// body (Stripe's type, Paddle's event_type) would otherwise let a sender
// put a 1 MB string into every row of the events list and its API.
const MaxTopicLen = 512

// Outcome says what became of a received webhook.
type Outcome int

// The outcomes of Receive, in its Result.
const (
	Accepted  Outcome = iota + 1 // new event, durably stored
	Duplicate                    // id already remembered; nothing stored
	Ping                         // a sender's handshake; nothing stored
)

// The outcomes of a request Receive refused (it returns an error, never
// these in a Result), as Stats counts them.
const (
	Rejected Outcome = iota + Ping + 1 // bad or missing signature
	Invalid                            // signed, but not a webhook we can take
	Failed                             // the store could not take it
)

// String returns the outcome as the "status" of the HTTP answer and as
// the outcome label of the request metric.
func (o Outcome) String() string {
	switch o {
	case Accepted:
		return "accepted"
	case Duplicate:
		return "duplicate"
	case Ping:
		return "ping"
	case Rejected:
		return "rejected"
	case Invalid:
		return "invalid"
	case Failed:
		return "failed"
	}
	return "unknown"
}

// Result is the answer to one received webhook.
type Result struct {
	Outcome Outcome
	ID      string
}

// Inbound is a webhook as it arrived: the raw body and every header. The
// receiver only reads them; Accept copies what it keeps.
type Inbound struct {
	Body   []byte
	Header []HeaderField
	// Client is the sender's address, for the log.
	Client string
}

// Get returns the value of the first header called name, ignoring case.
func (in *Inbound) Get(name string) string {
	for i := range in.Header {
		if strings.EqualFold(in.Header[i].Name, name) {
			return in.Header[i].Value
		}
	}
	return ""
}

// SourceStats is what the receiver keeps of one source since start for
// its rejection log line; the page's and API's counts are the store's
// (Stats, CountStore), the metrics' are Stats'.
type SourceStats struct {
	Rejected atomic.Uint64 // bad or missing signature
	warn     Throttle      // of the rejection log lines
}

// Receiver turns verified webhooks into durable events: verify, identify,
// remember once, store — and only then answer.
type Receiver struct {
	store IngestStore
	// routing is what the config in force says: one load per request,
	// swapped whole by Apply.
	routing atomic.Pointer[routing]
	// Now is the clock; tests replace it.
	Now func() time.Time
	// Logger receives accepted events and rejections (both rate-limited)
	// and storage failures.
	Logger *slog.Logger
	// Stats, when set, counts outcomes for the status page and metrics.
	Stats *Stats

	unknown Throttle // of the log lines about unknown sources
	accepts Throttle // of the log lines about accepted events
	// ruleWarn throttles the log lines about the rules of routes not in
	// rules (none in a config the receiver was given).
	ruleWarn Throttle
}

// routing is the receiver's view of one config: never changed once in
// force. What is kept per source and per route (counters, throttles)
// carries over to the next config by name.
type routing struct {
	cfg       *Config
	sources   map[string]*Source
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

// NewReceiver builds a receiver for cfg's sources over store.
func NewReceiver(cfg *Config, store IngestStore) *Receiver {
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
func (r *Receiver) Apply(cfg *Config) {
	old := r.routing.Load()
	rt := &routing{
		cfg:       cfg,
		sources:   make(map[string]*Source, len(cfg.Sources)),
		stats:     make(map[string]*SourceStats, len(cfg.Sources)),
		rules:     map[string]*routeRules{},
		retention: cfg.Retention.EventIDs,
	}
	for _, s := range cfg.Sources {
		rt.sources[s.Name] = s
		rt.stats[s.Name] = &SourceStats{}
		if old != nil && old.stats[s.Name] != nil {
			rt.stats[s.Name] = old.stats[s.Name]
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
}

// SourceStats returns what is kept of source, or nil for an unknown source.
func (r *Receiver) SourceStats(source string) *SourceStats { return r.routing.Load().stats[source] }

// Receive verifies in as a webhook for source and, when genuine and new,
// stores it durably before returning Accepted.
// Counters and metrics take the configured name, never the request's
// string; an unknown source is counted under the one label UnknownSource
// and logged, throttled, with its path.
func (r *Receiver) Receive(ctx context.Context, source string, in *Inbound) (Result, error) {
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
		return Result{}, Errorf(ENOTFOUND, "unknown source")
	}
	res, err := r.receive(ctx, rt, src, in)
	r.Stats.Inbound(src.Name, outcomeOf(res, err), time.Since(start))
	return res, err
}

// outcomeOf says what Receive did, for the stats.
func outcomeOf(res Result, err error) Outcome {
	switch ErrorCode(err) {
	case EUNAUTHORIZED:
		return Rejected
	case EINVALID:
		return Invalid
	case EUNAVAILABLE, EINTERNAL:
		if err != nil {
			return Failed
		}
	}
	return res.Outcome
}

func (r *Receiver) receive(ctx context.Context, rt *routing, src *Source, in *Inbound) (Result, error) {
	source := src.Name
	st := rt.stats[source]
	now := r.Now()
	v, err := src.Verify(provider.Request{Body: in.Body, Header: in, URL: src.URL}, now)
	if err != nil {
		st.Rejected.Add(1)
		r.warnRejected(st, source, err, now, in.Client)
		return Result{}, Errorf(EUNAUTHORIZED, "%s", err.Error())
	}
	if v.Ping {
		return Result{Outcome: Ping}, nil
	}
	id, topic, err := r.identify(src, v, in)
	if err != nil {
		return Result{}, err
	}
	e := &Event{
		Source:     source,
		ID:         id,
		Topic:      topic,
		ReceivedAt: now,
		Header:     keptHeaders(in.Header),
		Body:       in.Body,
	}
	plan := r.plan(rt, src, id, topic, in)
	if plan.Empty() && len(plan.Filtered) > 0 {
		e.Unrouted = UnroutedReason(plan.Filtered)
	}
	dup, err := r.store.Accept(ctx, e, now.Add(rt.retention), plan)
	if err != nil {
		r.Stats.storage().Refused(r.Logger, err, "source", source)
		return Result{}, Errorf(EUNAVAILABLE, "storage unavailable, retry later")
	}
	if dup {
		return Result{Outcome: Duplicate, ID: id}, nil
	}
	r.Stats.Filtered(plan.Filtered)
	r.logAccepted(now, source, id, topic, e.Seq)
	return Result{Outcome: Accepted, ID: id}, nil
}

// plan decides where an event goes, route by route in config order: a
// route takes the event when its source and topics match and its filter
// (if any) says yes; then deliveries now for a route without a key (each
// destination once, for the first route that takes the event and names
// it), and a debounce step for a keyed route. An event whose key cannot be
// built goes out at once on that route, never dropped. A filter's error is
// a no, noted in the plan (the store counts it) and logged, throttled.
//
// Costs: the filters' RuleInput is made at the first route with a filter,
// once per event, so the rules engine parses the body once however many
// routes have rules, and an event no filtered route matches allocates
// nothing for them (BenchmarkPlan); the headers the templates read are
// made at the first route with a key or an order key.
func (r *Receiver) plan(rs *routing, src *Source, id, topic string, in *Inbound) *Plan {
	p := &Plan{}
	var h provider.Header // how the templates see the headers, made on first use
	var rin *RuleInput    // what the filters see, made on first use
	for _, rt := range rs.cfg.Routes {
		if !rt.Matches(src.Name, topic) {
			continue
		}
		if rt.Filter != nil {
			if rin == nil {
				rin = &RuleInput{Source: src.Name, Topic: topic, ID: id, Header: in.Header, Body: in.Body}
			}
			if ok, err := r.match(rs, rt, rin); !ok {
				note := FilterNote{Route: rt.Name}
				if err != nil {
					note.Err = err.Error()
				}
				p.Filtered = append(p.Filtered, note)
				continue
			}
		}
		if h == nil && (rt.Key != nil || rt.OrderKey != nil) {
			h = provider.Headers(src.Provider, in)
		}
		fin := fields.Input{Body: in.Body, Header: h, Source: src.Name, Topic: topic}
		order := r.orderKey(rs, rt, fin)
		if rt.Key == nil {
			for _, d := range rt.To {
				p.Direct = AddDirect(p.Direct, Direct{Dest: d, Route: rt.Name, OrderKey: order})
			}
			continue
		}
		key, err := rt.Key.Render(fin)
		if err != nil {
			p.Unkeyed = append(p.Unkeyed, rt.Name)
			for _, d := range rt.To {
				p.Direct = AddDirect(p.Direct, Direct{Dest: d, Route: rt.Name, OrderKey: order})
			}
			continue
		}
		p.Debounce = append(p.Debounce, &DebounceOp{Route: rt.Name, Key: key, Delay: rt.Debounce,
			Limit: rt.RateLimit.N, Window: rt.RateLimit.Window, To: rt.To, OrderKey: order})
	}
	return p
}

// FilterNote is what a route's filter did to an event it turned away: Err
// is its error ("" when it said no).
type FilterNote struct {
	Route string
	Err   string
}

// routeRules is what the receiver keeps of one route with rules.
type routeRules struct {
	filterWarn Throttle // of the log lines about its filter's errors
	orderWarn  Throttle // of the log lines about order keys it could not build
}

// Log lines about a route's rules are throttled per route: at most one a
// minute for filter errors, and one for order keys that cannot be built.
const ruleLogEvery = time.Minute

// match asks rt's filter about in. A panic of the filter is its error,
// never the request's: the event is still accepted (promise 5).
func (r *Receiver) match(rs *routing, rt *Route, in *RuleInput) (ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			ok, err = false, fmt.Errorf("filter failed: %v", v)
		}
		if err != nil {
			ok = false
			r.warnRule(rs, rt, false, "route filter failed: the route does not take the event",
				"source", in.Source, "event", strings.Clone(in.ID), "topic", in.Topic, "error", LastText(err.Error()))
		}
	}()
	return rt.Filter.Match(in)
}

// orderKey renders rt's order key for in; one that cannot be built is ""
// (the deliveries go out without an order), logged, throttled.
func (r *Receiver) orderKey(rs *routing, rt *Route, in fields.Input) string {
	if rt.OrderKey == nil {
		return ""
	}
	k, err := rt.OrderKey.Render(in)
	if err != nil {
		r.warnRule(rs, rt, true, "order key cannot be built: the route's deliveries go out unordered",
			"source", in.Source, "topic", in.Topic, "error", LastText(err.Error()))
		return ""
	}
	return k
}

// warnRule writes one throttled warning about rt's filter, or its order
// key. A route without its own throttle in rs shares one.
func (r *Receiver) warnRule(rs *routing, rt *Route, order bool, msg string, args ...any) {
	t := &r.ruleWarn
	if rr := rs.rules[rt.Name]; rr != nil && order {
		t = &rr.orderWarn
	} else if rr != nil {
		t = &rr.filterWarn
	}
	if ok, held := t.Allow(r.Now(), ruleLogEvery); ok {
		r.Logger.Warn(msg, append(args, "route", rt.Name, "held_since_last_line", held)...)
	}
}

// MaxUnroutedLen bounds Event.Unrouted: enough for a few routes' reasons.
const MaxUnroutedLen = 512

// UnroutedReason says which filters turned an event away, as its page
// shows it: `route "erp-paid": filter false; route "slack": filter error:
// no such key: amount`, cut to MaxUnroutedLen bytes of valid UTF-8 with
// no control characters (an error may quote the body).
func UnroutedReason(notes []FilterNote) string {
	var b strings.Builder
	for i, n := range notes {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("route " + strconv.Quote(n.Route) + ": filter ")
		if n.Err == "" {
			b.WriteString("false")
		} else {
			b.WriteString("error: " + n.Err)
		}
		if b.Len() > 4*MaxUnroutedLen {
			break
		}
	}
	s := strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return ' '
		}
		return c
	}, strings.ToValidUTF8(b.String(), "\uFFFD"))
	if len(s) <= MaxUnroutedLen {
		return s
	}
	n := MaxUnroutedLen - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// identify applies the source's id and topic overrides to the provider's
// verdict. Only called on a verified request: overrides may parse the body.
func (r *Receiver) identify(src *Source, v provider.Verdict, in *Inbound) (id, topic string, err error) {
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
			return "", "", Errorf(EINVALID, "no event id: source %s reads it with id = %q: %s", src.Name, src.ID.String(), err.Error())
		}
	}
	return checkID(src, id, topic)
}

// checkID refuses an event without a usable id, naming where the
// provider's rule looked for it.
func checkID(src *Source, id, topic string) (string, string, error) {
	switch {
	case id == "" && src.ID != nil:
		return "", "", Errorf(EINVALID, "no event id: source %s's id = %q gave an empty one", src.Name, src.ID.String())
	case id == "":
		return "", "", Errorf(EINVALID, "no event id: provider %s reads it from %s", src.Provider, provider.IDFrom(src.Provider))
	case len(id) > MaxIDLen:
		return "", "", Errorf(EINVALID, "event id longer than %d bytes", MaxIDLen)
	case len(topic) > MaxTopicLen:
		return "", "", Errorf(EINVALID, "topic longer than %d bytes", MaxTopicLen)
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
func keptHeaders(h []HeaderField) []HeaderField {
	out := make([]HeaderField, 0, len(h))
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
