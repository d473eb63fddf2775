package app_test

import (
	"slices"
	"testing"
	"time"

	"hookbox/app"
)

func TestDecideDebounce(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	debounced := &app.DebounceOp{Route: "r", Key: "k", Delay: 30 * time.Second}
	limited := &app.DebounceOp{Route: "r", Key: "k", Delay: 30 * time.Second, Limit: 2, Window: time.Minute}
	for _, tc := range []struct {
		name    string
		op      *app.DebounceOp
		pending bool
		sends   []time.Time
		now     time.Time
		want    app.DebounceDecision
	}{
		{name: "MergeIntoPending", op: limited, pending: true, sends: []time.Time{at(0), at(time.Second)}, now: at(2 * time.Second),
			want: app.DebounceDecision{Result: app.Merged}},
		{name: "MergeWithoutLimit", op: debounced, pending: true, now: at(0),
			want: app.DebounceDecision{Result: app.Merged}},
		{name: "OpenWithoutLimit", op: debounced, sends: []time.Time{at(0), at(time.Second)}, now: at(2 * time.Second),
			want: app.DebounceDecision{Result: app.Opened, Due: at(32 * time.Second)}},
		{name: "OpenTakesFirstSlot", op: limited, now: at(0),
			want: app.DebounceDecision{Result: app.Opened, Due: at(30 * time.Second), Sends: []time.Time{at(0)}, Limited: true}},
		{name: "OpenTakesLastSlot", op: limited, sends: []time.Time{at(0)}, now: at(10 * time.Second),
			want: app.DebounceDecision{Result: app.Opened, Due: at(40 * time.Second), Sends: []time.Time{at(0), at(10 * time.Second)}, Limited: true}},
		{name: "DeferUntilOldestLeaves", op: limited, sends: []time.Time{at(0), at(10 * time.Second)}, now: at(20 * time.Second),
			want: app.DebounceDecision{Result: app.Deferred, Due: at(time.Minute), Sends: []time.Time{at(0), at(10 * time.Second)}, Limited: true}},
		{name: "DeferBehindTheLimitNotTheOldest", op: limited, sends: []time.Time{at(0), at(10 * time.Second), at(20 * time.Second)}, now: at(30 * time.Second),
			want: app.DebounceDecision{Result: app.Deferred, Due: at(70 * time.Second), Sends: []time.Time{at(0), at(10 * time.Second), at(20 * time.Second)}, Limited: true}},
		{name: "WindowEdgeSendLeft", op: limited, sends: []time.Time{at(0), at(10 * time.Second)}, now: at(time.Minute),
			want: app.DebounceDecision{Result: app.Opened, Due: at(90 * time.Second), Sends: []time.Time{at(10 * time.Second), at(time.Minute)}, Limited: true}},
		{name: "WindowEdgeJustInside", op: limited, sends: []time.Time{at(0), at(10 * time.Second)}, now: at(time.Minute - time.Nanosecond),
			want: app.DebounceDecision{Result: app.Deferred, Due: at(time.Minute), Sends: []time.Time{at(0), at(10 * time.Second)}, Limited: true}},
		{name: "AllSendsLeft", op: limited, sends: []time.Time{at(0), at(10 * time.Second)}, now: at(time.Hour),
			want: app.DebounceDecision{Result: app.Opened, Due: at(time.Hour + 30*time.Second), Sends: []time.Time{at(time.Hour)}, Limited: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := app.DecideDebounce(tc.op, tc.pending, slices.Clone(tc.sends), tc.now)
			if got.Result != tc.want.Result || !got.Due.Equal(tc.want.Due) || got.Limited != tc.want.Limited ||
				!slices.EqualFunc(got.Sends, tc.want.Sends, time.Time.Equal) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestPruneSends(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sends := []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}
	for _, tc := range []struct {
		now  time.Time
		want int
	}{
		{t0.Add(time.Minute - time.Nanosecond), 3},
		{t0.Add(time.Minute), 2},
		{t0.Add(time.Minute + 2*time.Second), 0},
	} {
		if got := app.PruneSends(sends, time.Minute, tc.now); len(got) != tc.want {
			t.Errorf("at %v: %d sends kept, want %d", tc.now.Sub(t0), len(got), tc.want)
		}
	}
	if got := app.TakeSlot(sends, time.Minute, t0.Add(time.Minute)); len(got) != 3 || !got[2].Equal(t0.Add(time.Minute)) {
		t.Errorf("TakeSlot = %v", got)
	}
}

func TestKeepMerged(t *testing.T) {
	var m []uint64
	for i := uint64(0); i < app.MaxMergedKept+5; i++ {
		m = app.KeepMerged(m, i)
	}
	if len(m) != app.MaxMergedKept || m[0] != 0 || m[len(m)-1] != app.MaxMergedKept-1 {
		t.Fatalf("kept %d (first %d, last %d), want the first %d", len(m), m[0], m[len(m)-1], app.MaxMergedKept)
	}
}
