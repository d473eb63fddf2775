package dispatch_test

import (
	"context"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

// A paused destination gets nothing while the other one of the event is
// delivered; its delivery waits, pending with no attempt; resumed, it is
// delivered. No timing: the other destination's delivery, recorded after
// the pass that would have started both, is the signal.
func TestDispatcher_Paused(t *testing.T) {
	paused, other := newSink(t, 200), newSink(t, 200)
	dir := t.TempDir()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.PauseDestination(context.Background(), "d0", time.Now(), "ops", "test"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	h := newHarnessAt(t, destsConfig(`["1ms"]`, paused.URL, other.URL), dir, time.Now)
	h.send(t, "evt-p", `{}`)
	h.waitState(t, "evt-p", 1, app.Delivered)
	h.send(t, "evt-q", `{}`) // a second pass over both lanes
	h.waitState(t, "evt-q", 1, app.Delivered)
	if n := paused.requests(); n != 0 {
		t.Fatalf("the paused destination got %d requests; want 0", n)
	}
	if d := h.deliveries(t, "evt-p")[0]; d.State != app.Pending || d.Attempts != 0 {
		t.Fatalf("the paused destination's delivery is %v with %d attempts; want pending with none", d.State, d.Attempts)
	}
	p := app.NewPauser(h.cfg, h.db, h.disp.ControlsChanged, time.Now)
	if err := p.Resume(context.Background(), "d0"); err != nil {
		t.Fatal(err)
	}
	h.waitState(t, "evt-p", 0, app.Delivered)
	h.waitState(t, "evt-q", 0, app.Delivered)
	if err := p.Pause(context.Background(), "nope", "ops", ""); err != app.ErrNoDestination {
		t.Fatalf("pause of an unknown destination: %v; want ErrNoDestination", err)
	}
}

// A 429 with Retry-After holds the whole destination, stored: a delivery
// accepted after it starts no earlier than the hold's end.
func TestDispatcher_RetryAfterHoldsDestination(t *testing.T) {
	s := newSink(t, 429, 200) // the sink's 429 says Retry-After: 1
	h := newHarness(t, destsConfig(`["1ms", "5s"]`, s.URL))
	h.send(t, "evt-a", `{}`)
	h.waitAttempts(t, "evt-a", 0, 1)
	var held time.Time
	if !h.waitFor(5*time.Second, func() bool {
		cs, _ := h.db.DestinationControls(context.Background())
		held = cs["d0"].HeldUntil
		return !held.IsZero()
	}) {
		t.Fatal("no hold stored after a 429 with Retry-After")
	}
	h.send(t, "evt-b", `{}`)
	d := h.waitState(t, "evt-b", 0, app.Delivered)
	_, attempts, err := h.db.Delivery(context.Background(), d.ID)
	if err != nil || len(attempts) != 1 {
		t.Fatalf("evt-b: %d attempts, %v", len(attempts), err)
	}
	if attempts[0].Start.Before(held) {
		t.Fatalf("evt-b's attempt started at %v, before the hold's end %v", attempts[0].Start, held)
	}
}
