package storetest

import (
	"testing"
	"time"

	"hookbox/app"
)

// testHealth: a destination's health is stored as merged views (the
// earliest failure since the last success, the newest error and next
// try; a success ends the episode; a view that missed a success changes
// nothing); the alert mark is a compare-and-set that one caller wins and
// health saves keep; health and controls live side by side.
func testHealth(t *testing.T, open Opener) {
	s := open(t)
	if hs, err := s.DestinationHealths(ctx); err != nil || len(hs) != 0 {
		t.Fatalf("DestinationHealths of a new store = %v, %v; want none", hs, err)
	}
	save := func(dest string, h app.DestinationHealth) {
		t.Helper()
		if err := s.SaveDestinationHealth(ctx, dest, h); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step, dest string, want app.DestinationHealth) {
		t.Helper()
		hs, err := s.DestinationHealths(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := hs[dest]; !equalHealth(got, want) {
			t.Errorf("%s: %s = %+v; want %+v", step, dest, got, want)
		}
	}
	mark := func(dest string, from, to time.Time, want bool) {
		t.Helper()
		won, err := s.MarkDestinationAlerted(ctx, dest, from, to)
		if err != nil {
			t.Fatal(err)
		}
		if won != want {
			t.Errorf("MarkDestinationAlerted(%s, %v → %v) = %v; want %v", dest, from, to, won, want)
		}
	}
	if err := s.PauseDestination(ctx, "pos", T0, "admin", "maintenance"); err != nil {
		t.Fatal(err)
	}

	save("pos", app.DestinationHealth{FailingSince: T0, LastError: "HTTP 500", NextTry: T0.Add(time.Minute)})
	check("first failure", "pos", app.DestinationHealth{FailingSince: T0, LastError: "HTTP 500", NextTry: T0.Add(time.Minute)})
	// Another node's view, whose failures began later: the episode keeps
	// the first failure, and takes the newer error and next try.
	save("pos", app.DestinationHealth{FailingSince: T0.Add(10 * time.Second), LastError: "connection refused", NextTry: T0.Add(2 * time.Minute)})
	want := app.DestinationHealth{FailingSince: T0, LastError: "connection refused", NextTry: T0.Add(2 * time.Minute)}
	check("second view", "pos", want)

	mark("pos", time.Time{}, T0, true)
	mark("pos", time.Time{}, T0, false) // taken: a second node loses
	want.Alerted = T0
	check("alerted", "pos", want)
	save("pos", app.DestinationHealth{FailingSince: T0, LastError: "HTTP 502", NextTry: T0.Add(3 * time.Minute)})
	want.LastError, want.NextTry = "HTTP 502", T0.Add(3*time.Minute)
	check("a save keeps the mark", "pos", want)

	back := T0.Add(5 * time.Minute)
	save("pos", app.DestinationHealth{RecoveredAt: back})
	check("recovered", "pos", app.DestinationHealth{RecoveredAt: back, Alerted: T0})
	// A node that has not seen the success yet: its view changes nothing.
	save("pos", app.DestinationHealth{FailingSince: T0.Add(time.Minute), LastError: "stale", NextTry: back.Add(time.Minute)})
	check("stale view", "pos", app.DestinationHealth{RecoveredAt: back, Alerted: T0})
	// A failure after the success starts the next episode.
	save("pos", app.DestinationHealth{FailingSince: back, LastError: "timeout", NextTry: back.Add(time.Minute)})
	check("next episode", "pos", app.DestinationHealth{FailingSince: back, LastError: "timeout", NextTry: back.Add(time.Minute), RecoveredAt: back, Alerted: T0})
	mark("pos", T0, time.Time{}, true)
	mark("pos", T0, time.Time{}, false)
	check("recovery alert marked", "pos", app.DestinationHealth{FailingSince: back, LastError: "timeout", NextTry: back.Add(time.Minute), RecoveredAt: back})

	cs, err := s.DestinationControls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := cs["pos"]; !c.Paused || c.Reason != "maintenance" {
		t.Errorf("pos's controls after health saves = %+v; want its pause kept", c)
	}
	// The dispatcher reads the health with the controls.
	if c := cs["pos"]; !equalHealth(c.Health, app.DestinationHealth{FailingSince: back, LastError: "timeout", NextTry: back.Add(time.Minute), RecoveredAt: back}) {
		t.Errorf("pos's controls carry health %+v; want the stored one", c.Health)
	}
	if err := s.ResumeDestination(ctx, "pos"); err != nil {
		t.Fatal(err)
	}
	check("resume keeps the health", "pos", app.DestinationHealth{FailingSince: back, LastError: "timeout", NextTry: back.Add(time.Minute), RecoveredAt: back})
	if hs, _ := s.DestinationHealths(ctx); len(hs) != 1 {
		t.Errorf("DestinationHealths = %v; want pos's only", hs)
	}
	mark("erp", time.Time{}, T0, false) // nothing stored for it: no row to win
}

func equalHealth(a, b app.DestinationHealth) bool {
	return a.FailingSince.Equal(b.FailingSince) && a.LastError == b.LastError && a.NextTry.Equal(b.NextTry) &&
		a.RecoveredAt.Equal(b.RecoveredAt) && a.Alerted.Equal(b.Alerted)
}
