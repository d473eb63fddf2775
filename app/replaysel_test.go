package app_test

import (
	"slices"
	"testing"

	"hookbox/app"
)

// What a replay does with each delivery it matched, forced or not.
func TestReplayVerdictOf(t *testing.T) {
	for _, tc := range []struct {
		state app.DeliveryState
		force bool
		want  app.ReplayVerdict
	}{
		{app.Dead, false, app.ReplayIt},
		{app.Dead, true, app.ReplayIt},
		{app.Delivered, false, app.ReplayRefusedDelivered},
		{app.Delivered, true, app.ReplayIt},
		{app.Pending, false, app.ReplayLeftPending},
		{app.Pending, true, app.ReplayLeftPending},
	} {
		if got := app.ReplayVerdictOf(tc.state, tc.force); got != tc.want {
			t.Errorf("ReplayVerdictOf(%v, force %v) = %v, want %v", tc.state, tc.force, got, tc.want)
		}
	}
}

// The selection of a replay by query over its candidates: the summary the
// dry run and the run both report, split by what it does with each, and
// what the run writes: not forced, the dead ones, the delivered ones
// skipped (issue 44: the run refused them all).
func TestSelectReplay(t *testing.T) {
	item := func(id uint64, s app.DeliveryState) app.ReplayItem {
		return app.ReplayItem{Delivery: id, Destination: "pos", State: s, EventSeq: id}
	}
	mixed := []app.ReplayItem{item(1, app.Dead), item(2, app.Delivered), item(3, app.Dead), item(4, app.Delivered), item(5, app.Delivered)}
	dead := []app.ReplayItem{item(1, app.Dead), item(3, app.Dead)}
	many := make([]app.ReplayItem, 0, 25)
	manyIDs := make([]uint64, 0, 25)
	for i := range 25 {
		many = append(many, item(uint64(i+1), app.Dead))
		manyIDs = append(manyIDs, uint64(i+1))
	}
	for _, tc := range []struct {
		name     string
		q        app.ReplayQuery
		force    bool
		cands    []app.ReplayItem
		more     bool
		ids      []uint64
		from     []app.DeliveryState
		refused  int
		first    int
		selected int
		counts   app.ReplayCounts
	}{
		{"MixedUnforced", app.ReplayQuery{Status: app.ReplayAny}, false, mixed, false, []uint64{1, 3}, []app.DeliveryState{app.Dead}, 3, 5, 2,
			app.ReplayCounts{DeadSent: 2, DeliveredSkipped: 3}},
		{"MixedForced", app.ReplayQuery{Status: app.ReplayAny}, true, mixed, false, []uint64{1, 2, 3, 4, 5}, []app.DeliveryState{app.Delivered, app.Dead}, 0, 5, 5,
			app.ReplayCounts{DeadSent: 2, DeliveredSent: 3}},
		{"DeadUnforced", app.ReplayQuery{Status: app.ReplayDead}, false, dead, false, []uint64{1, 3}, []app.DeliveryState{app.Dead}, 0, 2, 2, app.ReplayCounts{DeadSent: 2}},
		{"DeadForced", app.ReplayQuery{Status: app.ReplayDead}, true, dead, false, []uint64{1, 3}, []app.DeliveryState{app.Dead}, 0, 2, 2, app.ReplayCounts{DeadSent: 2}},
		{"DeliveredForced", app.ReplayQuery{Status: app.ReplayDelivered}, true, mixed[1:2], false, []uint64{2}, []app.DeliveryState{app.Delivered}, 0, 1, 1,
			app.ReplayCounts{DeliveredSent: 1}},
		{"DeliveredUnforced", app.ReplayQuery{Status: app.ReplayDelivered}, false, mixed[1:2], false, nil, nil, 1, 1, 0, app.ReplayCounts{DeliveredSkipped: 1}},
		{"Nothing", app.ReplayQuery{Status: app.ReplayAny}, false, nil, false, []uint64{}, []app.DeliveryState{app.Dead}, 0, 0, 0, app.ReplayCounts{}},
		{"MoreThanShown", app.ReplayQuery{Status: app.ReplayDead}, false, many, true, manyIDs, []app.DeliveryState{app.Dead}, 0, app.ReplayFirstShown, 25,
			app.ReplayCounts{DeadSent: 25}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := app.SelectReplay(tc.q, tc.force, tc.cands, tc.more)
			r := p.Result
			delivered := 0
			for _, it := range tc.cands {
				if it.State == app.Delivered {
					delivered++
				}
			}
			if r.Matched != len(tc.cands) || r.Delivered != delivered || r.More != tc.more || r.Refused != tc.refused ||
				r.Selected != tc.selected || r.Replayed != 0 || len(r.First) != tc.first || r.Counts != tc.counts {
				t.Fatalf("result %+v; want matched %d, delivered %d, selected %d, refused %d, %d shown, split %+v", r, len(tc.cands), delivered, tc.selected, tc.refused, tc.first, tc.counts)
			}
			if len(p.IDs) != len(tc.ids) || len(tc.ids) > 0 && !slices.Equal(p.IDs, tc.ids) {
				t.Fatalf("ids %v, want %v", p.IDs, tc.ids)
			}
			if !slices.Equal(p.From, tc.from) {
				t.Fatalf("from %v, want %v", p.From, tc.from)
			}
			if r.Counts.Matched() != r.Matched || r.Counts.Sent() != r.Selected {
				t.Fatalf("split %+v: matched %d, sent %d; want %d, %d", r.Counts, r.Counts.Matched(), r.Counts.Sent(), r.Matched, r.Selected)
			}
		})
	}
}

// What a replay says it does, in the dry run's tense and the run's: the
// one sentence the CLI, the API and the page print (issue 44).
func TestReplayCounts_Say(t *testing.T) {
	for _, tc := range []struct {
		c         app.ReplayCounts
		dry, done string
	}{
		{app.ReplayCounts{DeadSent: 1, DeliveredSkipped: 5},
			"6 match: 1 dead will be sent, 5 delivered skipped (-force sends them too)",
			"6 match: 1 dead sent, 5 delivered skipped (-force sends them too)"},
		{app.ReplayCounts{DeadSent: 1, DeliveredSent: 5},
			"6 match: 1 dead and 5 delivered will be sent",
			"6 match: 1 dead and 5 delivered sent"},
		{app.ReplayCounts{DeliveredSkipped: 1},
			"1 matches: none will be sent, 1 delivered skipped (-force sends it too)",
			"1 matches: none sent, 1 delivered skipped (-force sends it too)"},
		{app.ReplayCounts{DeliveredSent: 2, PendingLeft: 1},
			"3 match: 2 delivered will be sent, 1 pending left alone (on its way already)",
			"3 match: 2 delivered sent, 1 pending left alone (on its way already)"},
		{app.ReplayCounts{DeadSent: 2, PendingLeft: 2, NotFound: 1},
			"4 match: 2 dead will be sent, 2 pending left alone (on their way already), 1 not found",
			"4 match: 2 dead sent, 2 pending left alone (on their way already), 1 not found"},
		{app.ReplayCounts{DeadSent: 2, DeliveredSent: 1, Changed: 1},
			"3 match: 2 of 2 dead and 1 delivered will be sent, 1 changed state meanwhile (replayed or swept) and left alone",
			"3 match: 2 of 2 dead and 1 delivered sent, 1 changed state meanwhile (replayed or swept) and left alone"},
		{app.ReplayCounts{NotFound: 2}, "2 not found", "2 not found"},
		{app.ReplayCounts{}, "nothing matches", "nothing matches"},
	} {
		if got := tc.c.Say(false, "-force"); got != tc.dry {
			t.Errorf("%+v: dry run says %q, want %q", tc.c, got, tc.dry)
		}
		if got := tc.c.Say(true, "-force"); got != tc.done {
			t.Errorf("%+v: run says %q, want %q", tc.c, got, tc.done)
		}
	}
}
