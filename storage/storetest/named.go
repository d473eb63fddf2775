package storetest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// RunNamed runs the tests of the overview's counts by name and last times
// (app.CountStore's AddNamed, NamedCounts, Lasts): what a store counts in
// its own commits, that a restart keeps it, and pruning.
func RunNamed(t *testing.T, open Reopener) {
	t.Run("InCommits", func(t *testing.T) { testNamedInCommits(t, open) })
	t.Run("SurviveRestart", func(t *testing.T) { testNamedRestart(t, open) })
	t.Run("Prune", func(t *testing.T) { testNamedPrune(t, open) })
	t.Run("LastErrorBounded", func(t *testing.T) { testNamedLastBounded(t, open) })
}

// named builds counts by name from kind, name, n triples.
func named(kv ...any) map[app.Named]uint64 {
	m := map[app.Named]uint64{}
	for i := 0; i+2 < len(kv); i += 3 {
		m[app.Named{Kind: kv[i].(app.NameKind), Name: kv[i+1].(string)}] = uint64(kv[i+2].(int))
	}
	return m
}

func showNamed(m map[app.Named]uint64) string {
	var lines []string
	for k, n := range m {
		lines = append(lines, fmt.Sprintf("\n  kind %d %q: %d", k.Kind, k.Name, n))
	}
	slices.Sort(lines)
	return strings.Join(lines, "")
}

// namedAround reads the counts by name of T0's day, failing t on an error.
func namedAround(t *testing.T, s storage.Store) map[app.Named]uint64 {
	t.Helper()
	m, err := s.NamedCounts(ctx, T0.Add(-23*time.Hour), T0.Add(time.Hour))
	if err != nil {
		t.Fatalf("NamedCounts: %v", err)
	}
	return m
}

func wantNamed(t *testing.T, got, want map[app.Named]uint64) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Fatalf("counts by name:%s\nwant:%s", showNamed(got), showNamed(want))
	}
}

func lasts(t *testing.T, s storage.Store) map[app.Named]app.Last {
	t.Helper()
	m, err := s.Lasts(ctx)
	if err != nil {
		t.Fatalf("Lasts: %v", err)
	}
	return m
}

// fillNamed does, in T0's hour, what the store counts by name: events
// accepted at two sources, a debounced route r (one merged, one fired),
// a rate-limited route rl (one deferred), a route u whose key could not
// be built, attempts that deliver and fail, and what AddNamed adds.
func fillNamed(t *testing.T, s storage.Store) (map[app.Named]uint64, map[app.Named]app.Last) {
	at := T0.Add(10 * time.Minute)
	mustAccept(t, s, NewEvent("shop", "d1", at), debounced("k", time.Minute))
	mustAccept(t, s, NewEvent("shop", "d2", at.Add(time.Second)), debounced("k", time.Minute))
	limited := func() *app.Plan {
		return &app.Plan{Debounce: []*app.DebounceOp{{Route: "rl", Key: "c", Delay: time.Second, Limit: 1, Window: time.Hour, To: []string{"pos"}}}}
	}
	mustAccept(t, s, NewEvent("gh", "l1", at), limited())
	if fired, _, err := s.FirePending(ctx, at.Add(2*time.Second)); err != nil || fired["rl"] != 1 {
		t.Fatalf("FirePending = %v, %v; want rl's", fired, err)
	}
	mustAccept(t, s, NewEvent("gh", "l2", at.Add(3*time.Second)), limited())
	if fired, _, err := s.FirePending(ctx, at.Add(2*time.Minute)); err != nil || fired["r"] != 1 {
		t.Fatalf("FirePending = %v, %v; want r's", fired, err)
	}
	e := NewEvent("shop", "p1", at.Add(5*time.Second))
	mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos", "erp"), Unkeyed: []string{"u"}})
	ds := deliveries(t, s, e.Seq, 2)
	record(t, s, ds[0].ID, &app.Attempt{Start: at, Duration: time.Second, Status: 200}, app.Delivered, time.Time{})
	record(t, s, ds[1].ID, &app.Attempt{Start: at.Add(2 * time.Minute), Duration: time.Second, Status: 500}, app.Pending, at.Add(time.Hour))
	// An older failure recorded later does not replace the newer one.
	e2 := NewEvent("shop", "p2", at)
	mustAccept(t, s, e2, &app.Plan{Direct: app.DirectTo("erp")})
	ds2 := deliveries(t, s, e2.Seq, 1)
	record(t, s, ds2[0].ID, &app.Attempt{Start: at, Error: "connection refused"}, app.Pending, at.Add(time.Hour))
	s.AddNamed(at, app.SourceDuplicate, "shop", 2)
	s.AddNamed(at, app.SourceRejected, "gh", 3)
	s.AddNamed(at, app.SourceInvalid, "gh", 1)
	want := named(app.SourceAccepted, "shop", 4, app.SourceAccepted, "gh", 2,
		app.SourceDuplicate, "shop", 2, app.SourceRejected, "gh", 3, app.SourceInvalid, "gh", 1,
		app.RouteReceived, "r", 2, app.RouteMerged, "r", 1, app.RouteSent, "r", 1,
		app.RouteReceived, "rl", 2, app.RouteDeferred, "rl", 1, app.RouteSent, "rl", 1,
		app.RouteReceived, "u", 1, app.RouteUnkeyed, "u", 1,
		app.DestDelivered, "pos", 1, app.DestFailed, "erp", 2)
	wantLasts := map[app.Named]app.Last{
		{Kind: app.SourceAccepted, Name: "shop"}: {At: at.Add(5 * time.Second)},
		{Kind: app.SourceAccepted, Name: "gh"}:   {At: at.Add(3 * time.Second)},
		{Kind: app.DestFailed, Name: "erp"}:      {At: at.Add(2*time.Minute + time.Second), Text: "HTTP 500"},
		{Kind: app.DestDelivered, Name: "pos"}:   {At: at.Add(time.Second)},
	}
	return want, wantLasts
}

func wantLasts(t *testing.T, got, want map[app.Named]app.Last) {
	t.Helper()
	ok := len(got) == len(want)
	for k, w := range want {
		ok = ok && got[k].At.Equal(w.At) && got[k].Text == w.Text
	}
	if !ok {
		t.Fatalf("lasts = %v\nwant %v", got, want)
	}
}

// InCommits: accepts, debounce steps, fired pending deliveries and
// attempts count by name in the hour they happened, beside AddNamed's.
func testNamedInCommits(t *testing.T, open Reopener) {
	s, _ := open(t)
	wantNamed(t, namedAround(t, s), map[app.Named]uint64{})
	want, wl := fillNamed(t, s)
	wantNamed(t, namedAround(t, s), want)
	wantLasts(t, lasts(t, s), wl)
	// Only the hours asked for.
	if m, err := s.NamedCounts(ctx, T0.Add(time.Hour), T0.Add(2*time.Hour)); err != nil || len(m) != 0 {
		t.Fatalf("NamedCounts of the next hours = %v, %v; want none", m, err)
	}
}

// SurviveRestart: closing and opening the store again shows the same
// counts and lasts, those AddNamed took after the last commit included.
func testNamedRestart(t *testing.T, open Reopener) {
	s, reopen := open(t)
	want, wl := fillNamed(t, s)
	s.AddNamed(T0, app.SourceRejected, "shop", 1) // only Close writes it
	want[app.Named{Kind: app.SourceRejected, Name: "shop"}] = 1
	wantNamed(t, namedAround(t, s), want)
	s = reopen(t, s)
	wantNamed(t, namedAround(t, s), want)
	wantLasts(t, lasts(t, s), wl)
	s = reopen(t, s)
	wantNamed(t, namedAround(t, s), want)
}

// Prune forgets the counts by name of the hours that ended, written or
// only added; the lasts stay.
func testNamedPrune(t *testing.T, open Reopener) {
	s, _ := open(t)
	mustAccept(t, s, NewEvent("shop", "old", T0.Add(-2*time.Hour)), nil)
	mustAccept(t, s, NewEvent("shop", "now", T0), nil)
	s.AddNamed(T0.Add(-time.Hour), app.SourceRejected, "shop", 1)
	s.AddNamed(T0, app.SourceRejected, "shop", 1)
	wantNamed(t, namedAround(t, s), named(app.SourceAccepted, "shop", 2, app.SourceRejected, "shop", 2))
	if _, err := s.PruneCounts(ctx, T0); err != nil {
		t.Fatal(err)
	}
	wantNamed(t, namedAround(t, s), named(app.SourceAccepted, "shop", 1, app.SourceRejected, "shop", 1))
	if _, err := s.PruneCounts(ctx, T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	wantNamed(t, namedAround(t, s), map[app.Named]uint64{})
	wantLasts(t, lasts(t, s), map[app.Named]app.Last{{Kind: app.SourceAccepted, Name: "shop"}: {At: T0}})
}

// LastErrorBounded: a destination's last error is kept cut short.
func testNamedLastBounded(t *testing.T, open Reopener) {
	s, _ := open(t)
	_, ds := acceptRouted(t, s, "big", "pos")
	long := strings.Repeat("é", app.MaxLastText)
	record(t, s, ds[0].ID, &app.Attempt{Start: T0, Error: long}, app.Dead, time.Time{})
	l := lasts(t, s)[app.Named{Kind: app.DestFailed, Name: "pos"}]
	if len(l.Text) > app.MaxLastText || !strings.HasPrefix(long, l.Text) || len(l.Text) < app.MaxLastText-1 {
		t.Fatalf("last error = %d bytes %q; want the first %d bytes of the error", len(l.Text), l.Text, app.MaxLastText)
	}
}
