package app_test

import (
	"maps"
	"slices"
	"testing"
	"time"

	"hookbox/app"
)

// The counts a store holds between commits: summed by hour and by hour
// and name, taken by a write and given back when it fails, pruned, read
// back over a range of hours, and turned into changes.
func TestCountTally(t *testing.T) {
	var tl app.CountTally
	if !tl.Empty() {
		t.Fatal("zero tally not empty")
	}
	one := func(k app.Kind, n uint64) app.Counts {
		var c app.Counts
		c[k] = n
		return c
	}
	pos := app.Named{Kind: app.DestDelivered, Name: "pos"}
	tl.Add(10, one(app.KindReceived, 2))
	tl.Add(10, one(app.KindReceived, 3))
	tl.Add(12, one(app.KindDead, 1))
	tl.AddNamed(10, pos, 4)
	tl.AddNamed(12, pos, 1)
	tl.AddNamed(13, pos, 7)

	byHour := map[int64]*app.Counts{10: new(app.Counts)}
	byHour[10][app.KindReceived] = 1 // written already
	tl.HoursInto(byHour, 10, 12)
	hourly := app.HourlyOf(byHour, 9, 12)
	if len(hourly) != 2 || !hourly[0].Hour.Equal(time.Unix(10*3600, 0).UTC()) || hourly[0].Counts[app.KindReceived] != 6 ||
		hourly[1].Counts[app.KindDead] != 1 {
		t.Fatalf("hourly %+v; want hour 10 with 6 received (1 written, 5 held), hour 12 with 1 dead", hourly)
	}
	sums := map[app.Named]uint64{}
	tl.NamedInto(sums, 10, 12)
	if sums[pos] != 5 {
		t.Fatalf("named sums %v; want pos 5 in hours 10 to 12", sums)
	}

	taken := tl.Take()
	if !tl.Empty() || taken.Empty() {
		t.Fatalf("after Take: tally %+v, taken %+v", tl, taken)
	}
	tl.Add(10, one(app.KindReceived, 1)) // came in while the write ran
	tl.AddTally(taken)                   // the write failed: it goes back
	if got := tl.Hours[10][app.KindReceived]; got != 6 {
		t.Fatalf("hour 10 after the give back = %d received, want 6", got)
	}
	d := tl.Delta()
	var kinds, named uint64
	for _, k := range d.Kinds {
		kinds += k.N
		if k.At.Unix()%3600 != 0 {
			t.Fatalf("change at %v: not an hour's start", k.At)
		}
	}
	for _, n := range d.Named {
		named += n.N
	}
	if kinds != 7 || named != 12 {
		t.Fatalf("delta of %d kinds, %d by name; want 7 and 12", kinds, named)
	}

	tl.Prune(12)
	if _, ok := tl.Hours[10]; ok || tl.Hours[12] == nil || len(tl.Named) != 2 {
		t.Fatalf("after Prune(12): hours %v, named %v; want hours from 12 on", slices.Collect(maps.Keys(tl.Hours)), tl.Named)
	}
}
