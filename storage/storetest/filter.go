package storetest

import (
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// Filtered: an event the routes' filters turned away is stored with its
// unrouted reason, read back byte for byte and listed as unrouted; what
// each filter did is counted per route in the accept's commit (a no as
// RouteFiltered, an error as RouteFilterErrors), beside the deliveries of
// the routes that took an event; a duplicate counts nothing.
func testFiltered(t *testing.T, open Opener) {
	s := open(t)
	at := T0.Add(20 * time.Minute)
	why := `route "erp-paid": filter false; route "slack-é": filter error: no such key: amount`
	turned := []app.FilterNote{{Route: "erp-paid"}, {Route: "slack-é", Err: "no such key: amount"}}

	away := NewEvent("shop", "away", at)
	away.Unrouted = why
	mustAccept(t, s, away, &app.Plan{Filtered: turned})
	taken := NewEvent("shop", "taken", at.Add(time.Second))
	mustAccept(t, s, taken, &app.Plan{Direct: []app.Direct{{Dest: "pos", Route: "all"}}, Filtered: turned[:1]})
	plain := NewEvent("shop", "plain", at.Add(2*time.Second))
	mustAccept(t, s, plain, nil)
	again := NewEvent("shop", "away", at.Add(3*time.Second))
	again.Unrouted = why
	if dup, err := s.Accept(ctx, again, again.ReceivedAt.Add(time.Hour), &app.Plan{Filtered: turned}); err != nil || !dup {
		t.Fatalf("Accept of the same id = %v, %v; want a duplicate", dup, err)
	}

	for _, w := range []struct {
		e    *app.Event
		want string
	}{{away, why}, {taken, ""}, {plain, ""}} {
		got, err := s.Event(ctx, w.e.Seq)
		if err != nil || got == nil {
			t.Fatalf("Event(%d) = %v, %v", w.e.Seq, got, err)
		}
		if got.Unrouted != w.want {
			t.Errorf("event %s: unrouted %q; want %q", w.e.ID, got.Unrouted, w.want)
		}
		if string(got.Body) != string(w.e.Body) || got.ID != w.e.ID {
			t.Errorf("event %s read back as %+v", w.e.ID, got)
		}
	}
	deliveries(t, s, away.Seq, 0)
	deliveries(t, s, taken.Seq, 1)
	rows := listStatus(t, s, "unrouted")
	if len(rows) != 2 || rows[0].Seq != plain.Seq || rows[1].Seq != away.Seq {
		t.Errorf("unrouted events = %+v; want plain and away", rows)
	}
	wantNamed(t, namedAround(t, s), named(app.SourceAccepted, "shop", 3,
		app.RouteFiltered, "erp-paid", 2, app.RouteFilterErrors, "slack-é", 1))
}

// listStatus lists the events of status, failing t on an error.
func listStatus(t *testing.T, s storage.Store, status string) []app.EventSummary {
	t.Helper()
	rows, _, err := s.ListEvents(ctx, app.EventQuery{Status: status, Limit: 10})
	if err != nil {
		t.Fatalf("ListEvents(%s): %v", status, err)
	}
	return rows
}
