package dispatch

import (
	"testing"
	"time"
)

// The pacer lets a pass start paceAhead's worth of a rate, then none
// until paceLead before its next slot; without a rate, all.
func TestPacer_Allow(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	p := pacer{spacing: 50 * time.Millisecond} // 20/s
	if n, _ := p.allow(t0, 8); n != 3 {
		t.Fatalf("first pass may start %d; want 3 (100 ms of 20/s)", n)
	}
	p.next = t0.Add(150 * time.Millisecond) // paceJobs took 3 slots
	if n, at := p.allow(t0.Add(10*time.Millisecond), 8); n != 0 || !at.Equal(t0.Add(100*time.Millisecond)) {
		t.Fatalf("pass 10 ms later: %d, wake %v; want 0, at the next slot less paceLead", n, at)
	}
	if n, _ := p.allow(t0.Add(100*time.Millisecond), 2); n != 2 {
		t.Fatalf("pass at the lead: %d; want 2 (all it wants)", n)
	}
	none := pacer{}
	if n, at := none.allow(t0, 8); n != 8 || !at.IsZero() {
		t.Fatalf("no rate: %d, %v; want 8 and no wait", n, at)
	}
	fast := pacer{spacing: time.Millisecond} // 1000/s
	if n, _ := fast.allow(t0, 1000); n != 101 {
		t.Fatalf("1000/s: %d in one pass; want 101", n)
	}
}
