package receive

import "hookbox/app"

// PlanOf is the plan r makes for an event of source with id and topic:
// the routing decision without a store.
func PlanOf(r *Receiver, source, id, topic string, in *app.Inbound) *app.Plan {
	rt := r.routing.Load()
	return r.plan(rt, rt.sources[source], id, topic, in)
}

// ConfigOf is r's config, for tests that change a route's rules.
func ConfigOf(r *Receiver) *app.Config { return r.routing.Load().cfg }
