package dispatch_test

import (
	"context"
	"testing"
	"time"

	"hookbox/app"
)

// healthOf is the stored health of dest in h's store.
func healthOf(t *testing.T, h *harness, dest string) app.DestinationHealth {
	t.Helper()
	hs, err := h.db.DestinationHealths(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return hs[dest]
}

// A destination's health is stored as it changes: failing since its
// first failed attempt (with the last error and a next try) while it
// fails, then recovered, with no failure, once it delivers.
func TestDispatcher_HealthStored(t *testing.T) {
	s := newSink(t, 500, 502, 200)
	h := newHarness(t, destsConfig(`["50ms", "50ms", "50ms"]`, s.URL))
	start := time.Now()
	h.send(t, "evt-1", `{"n": 1}`)
	var failing app.DestinationHealth
	if !h.waitFor(10*time.Second, func() bool { failing = healthOf(t, h, "d0"); return !failing.FailingSince.IsZero() }) {
		t.Fatalf("no failing health stored: %+v", failing)
	}
	if failing.FailingSince.Before(start) || failing.LastError == "" || failing.NextTry.IsZero() {
		t.Errorf("failing health = %+v; want failing since the first attempt, its error and a next try", failing)
	}
	first := failing.FailingSince
	h.waitState(t, "evt-1", 0, app.Delivered)
	var back app.DestinationHealth
	if !h.waitFor(10*time.Second, func() bool { back = healthOf(t, h, "d0"); return back.FailingSince.IsZero() }) {
		t.Fatalf("health after the delivery = %+v; want recovered", back)
	}
	if !back.RecoveredAt.After(first) || back.NextTry != (time.Time{}) || back.LastError != "" {
		t.Errorf("health after the delivery = %+v; want recovered after %v, nothing else", back, first)
	}
}

// Another node stored that the destination fails; a delivery through
// this node ends the episode in the store, though this node never saw it
// fail.
func TestDispatcher_HealthEndedByAnotherNode(t *testing.T) {
	s := newSink(t, 200)
	h := newHarness(t, destsConfig(`["1h"]`, s.URL))
	h.send(t, "evt-0", `{"n": 0}`) // this node runs, and knows d0 healthy
	h.waitState(t, "evt-0", 0, app.Delivered)
	since := time.Now().Add(-time.Minute).UTC().Truncate(time.Second)
	if err := h.db.SaveDestinationHealth(context.Background(), "d0", app.DestinationHealth{FailingSince: since, LastError: "HTTP 503"}); err != nil {
		t.Fatal(err)
	}
	h.disp.ControlsChanged() // as another node's change is read within ControlEvery
	h.send(t, "evt-1", `{"n": 1}`)
	h.waitState(t, "evt-1", 0, app.Delivered)
	var got app.DestinationHealth
	if !h.waitFor(10*time.Second, func() bool { got = healthOf(t, h, "d0"); return got.FailingSince.IsZero() }) {
		t.Fatalf("stored health after this node delivered = %+v; want the episode ended", got)
	}
	if !got.RecoveredAt.After(since) {
		t.Errorf("RecoveredAt = %v; want after %v", got.RecoveredAt, since)
	}
}
