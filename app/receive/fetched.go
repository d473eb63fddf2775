package receive

import (
	"context"

	"hookbox/app"
	"hookbox/app/provider"
)

// fetchedHeader is what a fetched event keeps of headers: it came from
// the provider's API as JSON, with no webhook's headers.
var fetchedHeader = []app.HeaderField{{Name: "Content-Type", Value: "application/json"}}

// Take takes in f, an event an upstream check fetched from source's
// provider API, as if its webhook had arrived: the source's id and topic
// rules, the same dedup, routes, filters and debounce, one commit. There
// is no signature to check: the API's TLS and key vouch for it. The event
// is marked fetched, with the provider's time. Duplicate means hookbox
// held it already.
func (r *Receiver) Take(ctx context.Context, source string, f app.Fetched) (app.Result, error) {
	rt := r.routing.Load()
	src, known := rt.sources[source]
	if !known {
		return app.Result{}, app.Errorf(app.ENOTFOUND, "unknown source")
	}
	in := &app.Inbound{Body: f.Body, Header: fetchedHeader, Client: app.UpstreamActor}
	id, topic, err := r.identify(src, provider.Verdict{ID: f.ID, Topic: f.Topic}, in)
	if err != nil {
		return app.Result{}, err
	}
	return r.accept(ctx, rt, src, in, &app.Event{
		Source:     source,
		ID:         id,
		Topic:      topic,
		ReceivedAt: r.Now(),
		Header:     fetchedHeader,
		Body:       f.Body,
		Origin:     app.OriginFetched,
		ProviderAt: f.At,
	})
}
