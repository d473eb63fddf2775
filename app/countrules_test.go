package app_test

import (
	"testing"
	"time"

	"hookbox/app"
)

// sums folds d as a store would: kinds and names summed per hour, lasts
// the latest (a tie: the later noted).
func sums(d *app.CountDelta) (map[app.Kind]uint64, map[app.Named]uint64, map[app.Named]app.Last) {
	kinds, named, lasts := map[app.Kind]uint64{}, map[app.Named]uint64{}, map[app.Named]app.Last{}
	for _, k := range d.Kinds {
		kinds[k.Kind] += k.N
	}
	for _, n := range d.Named {
		named[app.Named{Kind: n.Kind, Name: n.Name}] += n.N
	}
	for _, l := range d.Lasts {
		key := app.Named{Kind: l.Kind, Name: l.Name}
		if cur, ok := lasts[key]; !ok || !l.Last.At.Before(cur.At) {
			lasts[key] = l.Last
		}
	}
	return kinds, named, lasts
}

func TestCountDelta(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev := &app.Event{Source: "gh", ID: "1", ReceivedAt: at}
	nd := func(k app.NameKind, name string) app.Named { return app.Named{Kind: k, Name: name} }
	for _, tc := range []struct {
		name  string
		do    func(*app.CountDelta)
		kinds map[app.Kind]uint64
		named map[app.Named]uint64
		lasts map[app.Named]app.Last
	}{
		{name: "AcceptedUnrouted", do: func(d *app.CountDelta) { d.Accepted(ev, nil) },
			kinds: map[app.Kind]uint64{app.KindReceived: 1, app.KindAccepted: 1},
			named: map[app.Named]uint64{nd(app.SourceAccepted, "gh"): 1},
			lasts: map[app.Named]app.Last{nd(app.SourceAccepted, "gh"): {At: at}}},
		{name: "AcceptedDirect", do: func(d *app.CountDelta) { d.Accepted(ev, &app.Plan{Direct: app.DirectTo("a", "b")}) },
			kinds: map[app.Kind]uint64{app.KindReceived: 1, app.KindAccepted: 1},
			named: map[app.Named]uint64{nd(app.SourceAccepted, "gh"): 1},
			lasts: map[app.Named]app.Last{nd(app.SourceAccepted, "gh"): {At: at}}},
		{name: "AcceptedDebounced", do: func(d *app.CountDelta) {
			d.Accepted(ev, &app.Plan{Debounce: []*app.DebounceOp{
				{Route: "m", Result: app.Merged}, {Route: "d", Result: app.Deferred}, {Route: "o", Result: app.Opened},
			}, Unkeyed: []string{"u"}})
		},
			kinds: map[app.Kind]uint64{app.KindReceived: 1, app.KindAccepted: 1, app.KindDebounced: 1},
			named: map[app.Named]uint64{nd(app.SourceAccepted, "gh"): 1,
				nd(app.RouteReceived, "m"): 1, nd(app.RouteMerged, "m"): 1,
				nd(app.RouteReceived, "d"): 1, nd(app.RouteDeferred, "d"): 1,
				nd(app.RouteReceived, "o"): 1,
				nd(app.RouteReceived, "u"): 1, nd(app.RouteUnkeyed, "u"): 1},
			lasts: map[app.Named]app.Last{nd(app.SourceAccepted, "gh"): {At: at}}},
		// What the filters did counts per route, whether or not another
		// route took the event.
		{name: "AcceptedFiltered", do: func(d *app.CountDelta) {
			d.Accepted(ev, &app.Plan{Direct: app.DirectTo("pos"), Filtered: []app.FilterNote{
				{Route: "paid"}, {Route: "slack", Err: "no such key: amount"}, {Route: "paid2"}}})
		},
			kinds: map[app.Kind]uint64{app.KindReceived: 1, app.KindAccepted: 1},
			named: map[app.Named]uint64{nd(app.SourceAccepted, "gh"): 1,
				nd(app.RouteFiltered, "paid"): 1, nd(app.RouteFilterErrors, "slack"): 1, nd(app.RouteFiltered, "paid2"): 1},
			lasts: map[app.Named]app.Last{nd(app.SourceAccepted, "gh"): {At: at}}},
		{name: "AttemptDelivered", do: func(d *app.CountDelta) { d.Attempt("pos", &app.Attempt{Status: 200}, app.Delivered, at) },
			kinds: map[app.Kind]uint64{app.KindDelivered: 1},
			named: map[app.Named]uint64{nd(app.DestDelivered, "pos"): 1},
			lasts: map[app.Named]app.Last{nd(app.DestDelivered, "pos"): {At: at}}},
		{name: "AttemptRetrying", do: func(d *app.CountDelta) { d.Attempt("pos", &app.Attempt{Status: 503}, app.Pending, at) },
			kinds: map[app.Kind]uint64{app.KindRetrying: 1},
			named: map[app.Named]uint64{nd(app.DestFailed, "pos"): 1},
			lasts: map[app.Named]app.Last{nd(app.DestFailed, "pos"): {At: at, Text: "HTTP 503"}}},
		{name: "AttemptDead", do: func(d *app.CountDelta) { d.Attempt("pos", &app.Attempt{Error: "refused"}, app.Dead, at) },
			kinds: map[app.Kind]uint64{app.KindDead: 1},
			named: map[app.Named]uint64{nd(app.DestFailed, "pos"): 1},
			lasts: map[app.Named]app.Last{nd(app.DestFailed, "pos"): {At: at, Text: "refused"}}},
		{name: "LastFailureIsTheLatest", do: func(d *app.CountDelta) {
			d.Attempt("pos", &app.Attempt{Error: "late"}, app.Pending, at.Add(time.Second))
			d.Attempt("pos", &app.Attempt{Error: "early"}, app.Pending, at)
		},
			kinds: map[app.Kind]uint64{app.KindRetrying: 2},
			named: map[app.Named]uint64{nd(app.DestFailed, "pos"): 2},
			lasts: map[app.Named]app.Last{nd(app.DestFailed, "pos"): {At: at.Add(time.Second), Text: "late"}}},
		{name: "Fired", do: func(d *app.CountDelta) { d.Fired(at, map[string]int{"a": 3, "b": 1}) },
			kinds: map[app.Kind]uint64{},
			named: map[app.Named]uint64{nd(app.RouteSent, "a"): 3, nd(app.RouteSent, "b"): 1},
			lasts: map[app.Named]app.Last{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d app.CountDelta
			tc.do(&d)
			kinds, named, lasts := sums(&d)
			if len(kinds) != len(tc.kinds) || len(named) != len(tc.named) || len(lasts) != len(tc.lasts) {
				t.Fatalf("got kinds %v, named %v, lasts %v; want %v, %v, %v", kinds, named, lasts, tc.kinds, tc.named, tc.lasts)
			}
			for k, n := range tc.kinds {
				if got := kinds[k]; got != n {
					t.Errorf("kind %s: %d, want %d", app.KindNames[k], got, n)
				}
			}
			for k, n := range tc.named {
				if got := named[k]; got != n {
					t.Errorf("%v: %d, want %d", k, got, n)
				}
			}
			for k, l := range tc.lasts {
				if got := lasts[k]; !got.At.Equal(l.At) || got.Text != l.Text {
					t.Errorf("last %v: %+v, want %+v", k, got, l)
				}
			}
			for _, k := range d.Kinds {
				if !k.At.Equal(at) && !k.At.Equal(at.Add(time.Second)) {
					t.Errorf("kind counted at %v", k.At)
				}
			}
			d.Reset()
			if !d.Empty() {
				t.Errorf("not empty after Reset: %+v", d)
			}
		})
	}
}
