package storetest

import (
	"testing"
	"time"

	"hookbox/app"
)

// testControls: a pause is kept with its time, who and why; a second pause
// keeps the first; a hold only moves later; resume ends the pause but
// keeps the hold; each destination has its own.
func testControls(t *testing.T, open Opener) {
	s := open(t)
	if cs, err := s.DestinationControls(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("DestinationControls of a new store = %v, %v; want none", cs, err)
	}
	if err := s.PauseDestination(ctx, "pos", T0, "admin", "ERP maintenance"); err != nil {
		t.Fatal(err)
	}
	if err := s.PauseDestination(ctx, "pos", T0.Add(time.Minute), "cli", "again"); err != nil {
		t.Fatal(err)
	}
	hold := T0.Add(3 * time.Second)
	for _, until := range []time.Time{hold, T0.Add(time.Second)} { // the earlier one changes nothing
		if err := s.HoldDestination(ctx, "erp", until); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := s.DestinationControls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := app.DestinationControl{Paused: true, PausedAt: T0, PausedBy: "admin", Reason: "ERP maintenance"}
	if got := cs["pos"]; !equalControl(got, want) {
		t.Errorf("pos = %+v; want %+v", got, want)
	}
	if got, want := cs["erp"], (app.DestinationControl{HeldUntil: hold}); !equalControl(got, want) {
		t.Errorf("erp = %+v; want %+v", got, want)
	}
	if err := s.HoldDestination(ctx, "pos", hold); err != nil {
		t.Fatal(err)
	}
	if err := s.ResumeDestination(ctx, "pos"); err != nil {
		t.Fatal(err)
	}
	if err := s.ResumeDestination(ctx, "never-paused"); err != nil {
		t.Fatalf("resume of a destination never paused: %v", err)
	}
	if cs, err = s.DestinationControls(ctx); err != nil {
		t.Fatal(err)
	}
	if got, want := cs["pos"], (app.DestinationControl{HeldUntil: hold}); !equalControl(got, want) {
		t.Errorf("pos after resume = %+v; want %+v", got, want)
	}
	if c := cs["never-paused"]; c.Paused {
		t.Errorf("never-paused = %+v; want not paused", c)
	}
}

func equalControl(a, b app.DestinationControl) bool {
	return a.Paused == b.Paused && a.PausedAt.Equal(b.PausedAt) && a.PausedBy == b.PausedBy &&
		a.Reason == b.Reason && a.HeldUntil.Equal(b.HeldUntil)
}
