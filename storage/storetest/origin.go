package storetest

import (
	"testing"
	"time"

	"hookbox/app"
)

// testOrigin: an event an upstream check fetched keeps its origin and its
// provider's time wherever it is read (the event, the dispatcher's work,
// the stream); a webhook's has none.
func testOrigin(t *testing.T, open Opener) {
	s := open(t)
	at := T0.Add(-2 * time.Hour).Add(123 * time.Millisecond)
	fetched := &app.Event{Source: "pay", ID: "evt_1", Topic: "charge.succeeded", ReceivedAt: T0,
		Body: []byte(`{"id":"evt_1"}`), Origin: app.OriginFetched, ProviderAt: at}
	mustAccept(t, s, fetched, &app.Plan{Direct: app.DirectTo("erp")})
	plain := NewEvent("pay", "evt_2", T0)
	plain.Unrouted = "a route's filter said no" // version 2 beside version 3
	mustAccept(t, s, plain, nil)
	check := func(where string, e *app.Event, origin string, at time.Time) {
		t.Helper()
		if e == nil || e.Origin != origin || !e.ProviderAt.Equal(at) {
			t.Errorf("%s: event = %+v; want origin %q, provider time %v", where, e, origin, at)
		}
	}
	got, err := s.Event(ctx, fetched.Seq)
	if err != nil {
		t.Fatal(err)
	}
	check("Event", got, app.OriginFetched, at)
	if string(got.Body) != `{"id":"evt_1"}` || got.Topic != "charge.succeeded" || len(got.Header) != 0 {
		t.Errorf("Event = %+v; want the body and topic as fetched, no headers", got)
	}
	got, err = s.Event(ctx, plain.Seq)
	if err != nil {
		t.Fatal(err)
	}
	check("Event (webhook)", got, "", time.Time{})
	if got.Unrouted != plain.Unrouted {
		t.Errorf("unrouted = %q; want %q", got.Unrouted, plain.Unrouted)
	}
	work, _, err := s.DueDeliveries(ctx, "erp", T0.Add(time.Minute), 10, Never)
	if err != nil || len(work) != 1 {
		t.Fatalf("DueDeliveries = %d, %v; want 1", len(work), err)
	}
	check("DueDeliveries", work[0].Event, app.OriginFetched, at)
	es, err := s.EventsAfter(ctx, 0, 10, 1<<20)
	if err != nil || len(es) != 2 {
		t.Fatalf("EventsAfter = %d, %v; want 2", len(es), err)
	}
	check("EventsAfter", es[0], app.OriginFetched, at)
	check("EventsAfter (webhook)", es[1], "", time.Time{})
}
