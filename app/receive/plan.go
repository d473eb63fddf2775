package receive

import (
	"fmt"
	"strings"
	"time"

	"hookbox/app"
	"hookbox/app/fields"
	"hookbox/app/provider"
)

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
func (r *Receiver) plan(rs *routing, src *app.Source, id, topic string, in *app.Inbound) *app.Plan {
	p := &app.Plan{}
	var h provider.Header  // how the templates see the headers, made on first use
	var rin *app.RuleInput // what the filters see, made on first use
	for _, rt := range rs.cfg.Routes {
		if !rt.Matches(src.Name, topic) {
			continue
		}
		if rt.Filter != nil {
			if rin == nil {
				rin = &app.RuleInput{Source: src.Name, Topic: topic, ID: id, Header: in.Header, Body: in.Body}
			}
			if ok, err := r.match(rs, rt, rin); !ok {
				note := app.FilterNote{Route: rt.Name}
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
				p.Direct = app.AddDirect(p.Direct, app.Direct{Dest: d, Route: rt.Name, OrderKey: order})
			}
			continue
		}
		key, err := rt.Key.Render(fin)
		if err != nil {
			p.Unkeyed = append(p.Unkeyed, rt.Name)
			for _, d := range rt.To {
				p.Direct = app.AddDirect(p.Direct, app.Direct{Dest: d, Route: rt.Name, OrderKey: order})
			}
			continue
		}
		p.Debounce = append(p.Debounce, &app.DebounceOp{Route: rt.Name, Key: key, Delay: rt.Debounce,
			Limit: rt.RateLimit.N, Window: rt.RateLimit.Window, To: rt.To, OrderKey: order})
	}
	return p
}

// routeRules is what the receiver keeps of one route with rules.
type routeRules struct {
	filterWarn app.Throttle // of the log lines about its filter's errors
	orderWarn  app.Throttle // of the log lines about order keys it could not build
}

// Log lines about a route's rules are throttled per route: at most one a
// minute for filter errors, and one for order keys that cannot be built.
const ruleLogEvery = time.Minute

// match asks rt's filter about in. A panic of the filter is its error,
// never the request's: the event is still accepted (promise 5).
func (r *Receiver) match(rs *routing, rt *app.Route, in *app.RuleInput) (ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			ok, err = false, fmt.Errorf("filter failed: %v", v)
		}
		if err != nil {
			ok = false
			r.warnRule(rs, rt, false, "route filter failed: the route does not take the event",
				"source", in.Source, "event", strings.Clone(in.ID), "topic", in.Topic, "error", app.LastText(err.Error()))
		}
	}()
	return rt.Filter.Match(in)
}

// orderKey renders rt's order key for in; one that cannot be built is ""
// (the deliveries go out without an order), logged, throttled.
func (r *Receiver) orderKey(rs *routing, rt *app.Route, in fields.Input) string {
	if rt.OrderKey == nil {
		return ""
	}
	k, err := rt.OrderKey.Render(in)
	if err != nil {
		r.warnRule(rs, rt, true, "order key cannot be built: the route's deliveries go out unordered",
			"source", in.Source, "topic", in.Topic, "error", app.LastText(err.Error()))
		return ""
	}
	return k
}

// warnRule writes one throttled warning about rt's filter, or its order
// key. A route without its own throttle in rs shares one.
func (r *Receiver) warnRule(rs *routing, rt *app.Route, order bool, msg string, args ...any) {
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
