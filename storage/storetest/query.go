package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// ListEvents pages newest first with a cursor and filters by source, topic
// (a glob), id, and time.
func testListEvents(t *testing.T, open Opener) {
	s := open(t)
	var all []*app.Event
	for i := range 30 {
		src := []string{"shop", "stripe", "gh"}[i%3]
		e := NewEvent(src, fmt.Sprint("evt_", i), T0.Add(time.Duration(i)*time.Second))
		e.Topic = []string{"orders/create", "orders/paid", "push"}[i%3]
		e.Body = make([]byte, i)
		mustAccept(t, s, e, nil)
		all = append(all, e)
	}
	ids := func(rows []app.EventSummary) []string {
		var out []string
		for _, r := range rows {
			out = append(out, r.ID)
		}
		return out
	}
	var got []string
	var pages int
	q := app.EventQuery{Limit: 7}
	for {
		rows, next, err := s.ListEvents(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, ids(rows)...)
		if next == 0 {
			break
		}
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		q.Before = next
	}
	var want []string
	for i := len(all) - 1; i >= 0; i-- {
		want = append(want, all[i].ID)
	}
	if !slices.Equal(got, want) || pages != 5 {
		t.Fatalf("paged %v in %d pages; want %v in 5", got, pages, want)
	}
	rows, _, _ := s.ListEvents(ctx, app.EventQuery{Limit: 1})
	if r := rows[0]; r.Seq != all[29].Seq || r.Source != "gh" || r.Topic != "push" || r.Size != 29 || !r.ReceivedAt.Equal(all[29].ReceivedAt) || r.Status != "unrouted" {
		t.Fatalf("newest row = %+v", r)
	}
	for _, tc := range []struct {
		name string
		q    app.EventQuery
		want []string
	}{
		{"Source", app.EventQuery{Source: "stripe", Limit: 3}, []string{"evt_28", "evt_25", "evt_22"}},
		{"Topic", app.EventQuery{Topic: "orders/*", Limit: 4}, []string{"evt_28", "evt_27", "evt_25", "evt_24"}},
		{"SourceAndTopic", app.EventQuery{Source: "gh", Topic: "orders/*", Limit: 50}, nil},
		{"ID", app.EventQuery{ID: "evt_4", Limit: 50}, []string{"evt_4"}},
		{"IDAndSource", app.EventQuery{ID: "evt_4", Source: "stripe", Limit: 50}, []string{"evt_4"}},
		{"IDOtherSource", app.EventQuery{ID: "evt_4", Source: "shop", Limit: 50}, nil},
		{"UnknownID", app.EventQuery{ID: "nope", Limit: 50}, nil},
		{"Until", app.EventQuery{Until: T0.Add(5 * time.Second), Limit: 3}, []string{"evt_5", "evt_4", "evt_3"}},
		{"Since", app.EventQuery{Since: T0.Add(27 * time.Second), Limit: 50}, []string{"evt_29", "evt_28", "evt_27"}},
		{"SinceUntil", app.EventQuery{Since: T0.Add(10 * time.Second), Until: T0.Add(12 * time.Second), Limit: 50}, []string{"evt_12", "evt_11", "evt_10"}},
		{"Before", app.EventQuery{Before: all[3].Seq, Limit: 50}, []string{"evt_2", "evt_1", "evt_0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, _, err := s.ListEvents(ctx, tc.q)
			if err != nil || !slices.Equal(ids(rows), tc.want) {
				t.Fatalf("ListEvents(%+v) = %v, %v; want %v", tc.q, ids(rows), err, tc.want)
			}
		})
	}
	// An id that several sources use is found in each.
	mustAccept(t, s, NewEvent("stripe", "evt_0", T0.Add(time.Hour)), nil)
	if rows, _, _ := s.ListEvents(ctx, app.EventQuery{ID: "evt_0", Limit: 50}); len(rows) != 2 {
		t.Fatalf("id in two sources: %+v", rows)
	}
}

// The status of an event is the worst state of its deliveries: dead, then
// pending, then delivered; "merged" when debouncing folded it into another
// event, "unrouted" without deliveries.
func testListEventsStatus(t *testing.T, open Opener) {
	s := open(t)
	plan := func() *app.Plan { return &app.Plan{Direct: app.DirectTo("pos", "erp")} }
	dlv := NewEvent("shop", "delivered", T0)
	mustAccept(t, s, dlv, plan())
	pend := NewEvent("shop", "pending", T0.Add(time.Second))
	mustAccept(t, s, pend, plan())
	dead := NewEvent("shop", "dead", T0.Add(2*time.Second))
	mustAccept(t, s, dead, plan())
	mustAccept(t, s, NewEvent("shop", "unrouted", T0.Add(3*time.Second)), nil)
	acceptDebounced(t, s, "merged", "k", T0.Add(4*time.Second))
	acceptDebounced(t, s, "fired", "k", T0.Add(5*time.Second))
	fire(t, s, T0.Add(time.Minute), 1, time.Time{})
	// Waiting in a debounce window: not unrouted, and says until when.
	acceptDebounced(t, s, "waiting", "k2", T0.Add(6*time.Second))
	// Merged into a later event whose window is still open: merged, not
	// unrouted (nothing of it goes out, and the page must say why).
	acceptDebounced(t, s, "merged-open", "k3", T0.Add(7*time.Second))
	acceptDebounced(t, s, "waiting-2", "k3", T0.Add(8*time.Second))
	for _, d := range deliveries(t, s, dlv.Seq, 2) {
		record(t, s, d.ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	}
	ds := deliveries(t, s, pend.Seq, 2)
	record(t, s, ds[0].ID, &app.Attempt{Start: T0, Status: 200}, app.Delivered, time.Time{})
	ds = deliveries(t, s, dead.Seq, 2)
	record(t, s, ds[0].ID, &app.Attempt{Start: T0, Status: 410}, app.Dead, time.Time{})

	rows, _, err := s.ListEvents(ctx, app.EventQuery{Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rows {
		got[r.ID] = r.Status
	}
	want := map[string]string{"delivered": "delivered", "pending": "pending", "dead": "dead", "unrouted": "unrouted", "merged": "merged", "fired": "pending", "waiting": "waiting",
		"merged-open": "merged", "waiting-2": "waiting"}
	for _, r := range rows {
		if w := strings.HasPrefix(r.ID, "waiting"); w == r.WaitingUntil.IsZero() {
			t.Errorf("%s: waiting until %v", r.ID, r.WaitingUntil)
		}
	}
	for id, st := range want {
		if got[id] != st {
			t.Errorf("status of %s = %q, want %q", id, got[id], st)
		}
	}
	for st, ids := range map[string][]string{"delivered": {"delivered"}, "dead": {"dead"}, "unrouted": {"unrouted"},
		"merged": {"merged-open", "merged"}, "waiting": {"waiting-2", "waiting"}} {
		rows, _, err := s.ListEvents(ctx, app.EventQuery{Status: st, Limit: 50})
		var gotIDs []string
		for _, r := range rows {
			gotIDs = append(gotIDs, r.ID)
		}
		if err != nil || !slices.Equal(gotIDs, ids) {
			t.Errorf("ListEvents(status %s) = %v, %v; want %v (newest first)", st, gotIDs, err, ids)
		}
	}
	if rows, _, _ := s.ListEvents(ctx, app.EventQuery{Status: "pending", Limit: 50}); len(rows) != 2 {
		t.Errorf("ListEvents(status pending) = %+v; want pending and fired", rows)
	}
	if rows, _, _ := s.ListEvents(ctx, app.EventQuery{ID: "dead", Status: "pending", Limit: 50}); len(rows) != 0 {
		t.Errorf("ListEvents(id dead, status pending) = %+v; want none", rows)
	}
}

func testMeta(t *testing.T, open Opener) {
	s := open(t)
	if v, err := s.Meta(ctx, "status_password_bcrypt"); v != nil || err != nil {
		t.Fatalf("Meta of an unset name = %q, %v; want nil", v, err)
	}
	for _, val := range [][]byte{[]byte("$2a$10$hash"), []byte("second\x00value")} {
		if err := s.SetMeta(ctx, "status_password_bcrypt", val); err != nil {
			t.Fatal(err)
		}
		if v, err := s.Meta(ctx, "status_password_bcrypt"); string(v) != string(val) || err != nil {
			t.Fatalf("Meta = %q, %v; want %q", v, err, val)
		}
	}
}
