package storetest

import (
	"testing"
	"time"

	"hookbox/app"
)

// A recovery probe is recorded as an attempt marked as a probe, in the
// delivery's history beside the scheduled ones, and, being early, keeps
// the delivery's step in its schedule and its due time.
func testProbeAttempt(t *testing.T, open Opener) {
	s := open(t)
	_, ds := acceptRouted(t, s, "p", "pos")
	id := ds[0].ID
	record(t, s, id, &app.Attempt{Start: T0, Status: 503, Error: "HTTP 503"}, app.Pending, T0.Add(time.Hour))
	probe := app.AttemptRecord{ID: id, Attempt: &app.Attempt{Start: T0.Add(time.Minute), Status: 503, Error: "HTTP 503", Probe: true},
		State: app.Pending, Due: T0.Add(time.Hour), Early: true}
	if errs := s.RecordAttempts(ctx, []app.AttemptRecord{probe}); errs[0] != nil {
		t.Fatal(errs[0])
	}
	d, history, err := s.Delivery(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if d.Tries != 1 || d.Attempts != 2 || !d.Due.Equal(T0.Add(time.Hour)) {
		t.Fatalf("after a probe: %+v; want 2 attempts, still at step 1, due at 1h", d)
	}
	if len(history) != 2 || history[0].Probe || !history[1].Probe || history[1].N != 2 {
		t.Fatalf("history = %+v, %+v; want the scheduled attempt, then the probe (2) marked", history[0], history[len(history)-1])
	}
}
