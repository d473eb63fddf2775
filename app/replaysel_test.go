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
// dry run and the run both report, what the run writes, and the refusal
// of an unforced run that matched delivered ones.
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
		refusal  string
		first    int
		selected int
	}{
		{"MixedUnforced", app.ReplayQuery{Status: app.ReplayAny}, false, mixed, false, nil, []app.DeliveryState{app.Dead}, 3,
			`3 of the 5 matched deliveries were delivered already; add "force": true to send them again, or "status": "dead" to replay only the dead ones`, 5, 0},
		{"MixedForced", app.ReplayQuery{Status: app.ReplayAny}, true, mixed, false, []uint64{1, 2, 3, 4, 5}, []app.DeliveryState{app.Delivered, app.Dead}, 0, "", 5, 5},
		{"DeadUnforced", app.ReplayQuery{Status: app.ReplayDead}, false, dead, false, []uint64{1, 3}, []app.DeliveryState{app.Dead}, 0, "", 2, 2},
		{"DeadForced", app.ReplayQuery{Status: app.ReplayDead}, true, dead, false, []uint64{1, 3}, []app.DeliveryState{app.Dead}, 0, "", 2, 2},
		{"DeliveredForced", app.ReplayQuery{Status: app.ReplayDelivered}, true, mixed[1:2], false, []uint64{2}, []app.DeliveryState{app.Delivered}, 0, "", 1, 1},
		{"DeliveredUnforced", app.ReplayQuery{Status: app.ReplayDelivered}, false, mixed[1:2], false, nil, nil, 1,
			`1 of the 1 matched deliveries were delivered already; add "force": true to send them again, or "status": "dead" to replay only the dead ones`, 1, 0},
		{"Nothing", app.ReplayQuery{Status: app.ReplayAny}, false, nil, false, []uint64{}, []app.DeliveryState{app.Dead}, 0, "", 0, 0},
		{"MoreThanShown", app.ReplayQuery{Status: app.ReplayDead}, false, many, true, manyIDs, []app.DeliveryState{app.Dead}, 0, "", app.ReplayFirstShown, 25},
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
			if r.Matched != len(tc.cands) || r.Delivered != delivered || r.More != tc.more || r.Refused != tc.refused || r.Refusal != tc.refusal ||
				r.Selected != tc.selected || r.Replayed != 0 || len(r.First) != tc.first {
				t.Fatalf("result %+v; want matched %d, delivered %d, selected %d, refused %d (%q), %d shown", r, len(tc.cands), delivered, tc.selected, tc.refused, tc.refusal, tc.first)
			}
			if len(p.IDs) != len(tc.ids) || len(tc.ids) > 0 && !slices.Equal(p.IDs, tc.ids) {
				t.Fatalf("ids %v, want %v", p.IDs, tc.ids)
			}
			if !slices.Equal(p.From, tc.from) {
				t.Fatalf("from %v, want %v", p.From, tc.from)
			}
			if (p.Refusal != nil) != (tc.refused > 0) || p.Refusal != nil && app.ErrorCode(p.Refusal) != app.ECONFLICT {
				t.Fatalf("refusal %v with %d refused", p.Refusal, tc.refused)
			}
		})
	}
}
