package storetest

import (
	"slices"
	"testing"
	"time"

	"hookbox/app"
)

// An event's status is app.EventWord of its deliveries (a pending delivery
// that has had an attempt is failing, app.DeliveryWord), and each word of
// app.EventStates as a filter lists exactly the events of that status, in
// a list and in a search; CountRetrying counts the failing deliveries. The
// stores filter in their own queries: this holds them to the domain's one
// definition.
func testEventStateWords(t *testing.T, open Opener) {
	s := open(t)
	at := T0
	accept := func(id string, n int) []*app.Delivery {
		t.Helper()
		at = at.Add(time.Second)
		e := NewEvent("shop", id, at)
		if n == 0 {
			mustAccept(t, s, e, nil)
			return nil
		}
		dests := []string{"pos", "erp"}[:n]
		mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo(dests...)})
		return deliveries(t, s, e.Seq, n)
	}
	ok := func(id uint64) { record(t, s, id, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{}) }
	fail := func(id uint64) {
		record(t, s, id, &app.Attempt{Start: T0, Status: 503, Error: "HTTP 503"}, app.Pending, T0.Add(time.Hour))
	}
	dead := func(id uint64) {
		record(t, s, id, &app.Attempt{Start: T0, Status: 410, Error: "HTTP 410"}, app.Dead, time.Time{})
	}

	ds := accept("delivered", 2)
	ok(ds[0].ID)
	ok(ds[1].ID)
	accept("pending", 2)
	ds = accept("pending-delivered", 2)
	ok(ds[0].ID)
	ds = accept("failing", 1)
	fail(ds[0].ID)
	ds = accept("failing-pending", 2)
	fail(ds[0].ID)
	ds = accept("failing-delivered", 2)
	ok(ds[0].ID)
	fail(ds[1].ID)
	// A probe of a failing destination is an early attempt: the delivery
	// failed all the same.
	ds = accept("failing-probed", 1)
	if err := s.RecordAttempts(ctx, []app.AttemptRecord{{ID: ds[0].ID, Attempt: &app.Attempt{Start: T0, Status: 503, Error: "HTTP 503"},
		State: app.Pending, Due: T0.Add(time.Hour), Early: true}})[0]; err != nil {
		t.Fatal(err)
	}
	ds = accept("dead-failing", 2)
	dead(ds[0].ID)
	fail(ds[1].ID)
	accept("unrouted", 0)
	acceptDebounced(t, s, "merged", "k", at.Add(time.Second))
	acceptDebounced(t, s, "waiting", "k", at.Add(2*time.Second))

	want := map[string]string{"delivered": app.StateDelivered, "pending": app.StatePending, "pending-delivered": app.StatePending,
		"failing": app.StateFailing, "failing-pending": app.StateFailing, "failing-delivered": app.StateFailing, "failing-probed": app.StateFailing,
		"dead-failing": app.StateDead, "unrouted": app.StateUnrouted, "merged": app.StateMerged, "waiting": app.StateWaiting}
	rows, _, err := s.ListEvents(ctx, app.EventQuery{Limit: 50})
	if err != nil || len(rows) != len(want) {
		t.Fatalf("ListEvents = %d rows, %v; want %d", len(rows), err, len(want))
	}
	failing := 0
	byWord := map[string][]string{} // newest first, as the lists are
	for _, r := range rows {
		if r.Status != want[r.ID] {
			t.Errorf("status of %s = %q, want %q", r.ID, r.Status, want[r.ID])
		}
		ds, err := s.EventDeliveries(ctx, r.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if w := app.EventWord(ds); w != "" && w != r.Status {
			t.Errorf("status of %s = %q, but app.EventWord of its deliveries is %q", r.ID, r.Status, w)
		}
		for _, d := range ds {
			if app.DeliveryWord(d) == app.StateFailing {
				failing++
			}
		}
		byWord[r.Status] = append(byWord[r.Status], r.ID)
	}
	// A search keeps its own rows (those whose body has "note": not the
	// debounced ones) and filters them by the same words.
	found, err := s.SearchEvents(ctx, app.EventQuery{Q: "note", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	foundByWord := map[string][]string{}
	for _, r := range found.Rows {
		foundByWord[r.Status] = append(foundByWord[r.Status], r.ID)
	}
	if len(found.Rows) != len(want)-2 {
		t.Errorf("SearchEvents(note) = %d rows, want %d", len(found.Rows), len(want)-2)
	}
	for _, w := range app.EventStates {
		ids := func(rows []app.EventSummary) (out []string) {
			for _, r := range rows {
				out = append(out, r.ID)
			}
			return out
		}
		rows, _, err := s.ListEvents(ctx, app.EventQuery{Status: w, Limit: 50})
		if got := ids(rows); err != nil || !slices.Equal(got, byWord[w]) {
			t.Errorf("ListEvents(status %s) = %v, %v; want %v", w, got, err, byWord[w])
		}
		res, err := s.SearchEvents(ctx, app.EventQuery{Q: "note", Status: w, Limit: 50})
		if got := ids(res.Rows); err != nil || !slices.Equal(got, foundByWord[w]) {
			t.Errorf("SearchEvents(note, status %s) = %v, %v; want %v", w, got, err, foundByWord[w])
		}
	}
	if n, err := s.CountRetrying(ctx, 100); n != failing || err != nil {
		t.Errorf("CountRetrying = %d, %v; want the %d failing deliveries", n, err, failing)
	}
}
