package receive

import (
	"context"

	"hookbox/app"
)

// PlanOf is the plan r makes for an event of source with id and topic:
// the routing decision without a store.
func PlanOf(r *Receiver, source, id, topic string, in *app.Inbound) *app.Plan {
	rt := r.routing.Load()
	return r.plan(rt, rt.sources[source], id, topic, in)
}

// ConfigOf is r's config, for tests that change a route's rules.
func ConfigOf(r *Receiver) *app.Config { return r.routing.Load().cfg }

// WriteQuarantine writes what waits in r's quarantine queue now, as
// RunQuarantine does, and reports how many it wrote: the tests drive the
// writer by hand.
func WriteQuarantine(ctx context.Context, r *Receiver) int {
	n := 0
	for batch := r.q.take(nil); len(batch) > 0; batch = r.q.take(nil) {
		r.keep(ctx, batch)
		n += len(batch)
	}
	return n
}
