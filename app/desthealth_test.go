package app_test

import (
	"testing"
	"time"

	"hookbox/app"
)

// The episode rule: no alert before failing_for, one destination_failing
// at it, none again for the same episode (Alerted marks it), one
// destination_recovered once it ends, and never a recovery alert without
// the failing one; failing_for 0 sends no failing alert.
func TestDestinationAlert(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	after := func(d time.Duration) time.Time { return t0.Add(d) }
	const ff = 10 * time.Minute
	for _, tt := range []struct {
		name       string
		h          app.DestinationHealth
		now        time.Time
		failingFor time.Duration
		want       string
	}{
		{"NeverFailed", app.DestinationHealth{}, after(time.Hour), ff, ""},
		{"FirstFailure", app.DestinationHealth{FailingSince: t0}, t0, ff, ""},
		{"BeforeThreshold", app.DestinationHealth{FailingSince: t0}, after(ff - time.Second), ff, ""},
		{"AtThreshold", app.DestinationHealth{FailingSince: t0}, after(ff), ff, app.AlertDestinationFailing},
		{"AlreadyAlerted", app.DestinationHealth{FailingSince: t0, Alerted: t0}, after(5 * ff), ff, ""},
		{"Recovered", app.DestinationHealth{RecoveredAt: after(ff + time.Minute), Alerted: t0}, after(ff + time.Minute), ff, app.AlertDestinationRecovered},
		{"RecoveredWithoutAlert", app.DestinationHealth{RecoveredAt: after(time.Minute)}, after(time.Hour), ff, ""},
		{"ShortEpisodeRecovered", app.DestinationHealth{RecoveredAt: after(time.Minute)}, after(time.Minute), ff, ""},
		// Recovered and failing again before the alerter looked: the old
		// episode's recovery first, then (Alerted cleared) the new one's.
		{"NewEpisodeOwesRecovery", app.DestinationHealth{FailingSince: after(time.Hour), Alerted: t0}, after(2 * time.Hour), ff, app.AlertDestinationRecovered},
		{"NewEpisodeAfterRecoveryAlert", app.DestinationHealth{FailingSince: after(time.Hour)}, after(time.Hour + ff), ff, app.AlertDestinationFailing},
		{"Off", app.DestinationHealth{FailingSince: t0}, after(24 * time.Hour), 0, ""},
		{"OffStillOwesRecovery", app.DestinationHealth{RecoveredAt: after(time.Hour), Alerted: t0}, after(time.Hour), 0, app.AlertDestinationRecovered},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := app.DestinationAlert(tt.h, tt.now, tt.failingFor); got != tt.want {
				t.Errorf("DestinationAlert(%+v, now+%v, %v) = %q; want %q", tt.h, tt.now.Sub(t0), tt.failingFor, got, tt.want)
			}
		})
	}
}

// An episode walked through the rule with a clock: the failing alert goes
// out once however often the alerter looks, the recovery alert once, and
// the next episode alerts again.
func TestDestinationAlert_OncePerEpisode(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	const ff = 5 * time.Second
	var stored app.DestinationHealth
	var sent []string
	look := func(now time.Time) { // what CheckDestinations does, without a store
		switch app.DestinationAlert(stored, now, ff) {
		case app.AlertDestinationFailing:
			stored.Alerted = stored.FailingSince
			sent = append(sent, "failing")
		case app.AlertDestinationRecovered:
			stored.Alerted = time.Time{}
			sent = append(sent, "recovered")
		}
	}
	fail := func(at time.Time) {
		stored = app.MergeHealth(stored, app.DestinationHealth{FailingSince: at, LastError: "HTTP 500", NextTry: at.Add(time.Second)})
	}
	for i := range 20 { // a failure a second for 20 s, the alerter looking every 500 ms
		fail(t0.Add(time.Duration(i) * time.Second))
		look(t0.Add(time.Duration(i) * time.Second))
		look(t0.Add(time.Duration(i)*time.Second + 500*time.Millisecond))
	}
	stored = app.MergeHealth(stored, app.DestinationHealth{RecoveredAt: t0.Add(20 * time.Second)})
	for i := range 10 {
		look(t0.Add(20*time.Second + time.Duration(i)*time.Second))
	}
	fail(t0.Add(time.Minute)) // a second episode, short: no alert
	stored = app.MergeHealth(stored, app.DestinationHealth{RecoveredAt: t0.Add(time.Minute + time.Second)})
	look(t0.Add(2 * time.Minute))
	fail(t0.Add(3 * time.Minute)) // a third, long
	look(t0.Add(3*time.Minute + ff))
	look(t0.Add(4 * time.Minute))
	if got, want := sent, []string{"failing", "recovered", "failing"}; !equalStrings(got, want) {
		t.Errorf("alerts sent = %v; want %v", got, want)
	}
	if !stored.FailingSince.Equal(t0.Add(3 * time.Minute)) {
		t.Errorf("the third episode fails since %v; want %v", stored.FailingSince, t0.Add(3*time.Minute))
	}
}

// MergeHealth: the first failure of an episode stays, whatever node saw a
// later one; a success ends it; the view of a node that missed the
// success changes nothing.
func TestMergeHealth(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tt := range []struct {
		name      string
		old, view app.DestinationHealth
		want      app.DestinationHealth
	}{
		{"FirstFailure", app.DestinationHealth{}, app.DestinationHealth{FailingSince: at(1), LastError: "e1", NextTry: at(60)},
			app.DestinationHealth{FailingSince: at(1), LastError: "e1", NextTry: at(60)}},
		{"LaterViewKeepsFirst", app.DestinationHealth{FailingSince: at(1), LastError: "e1", NextTry: at(60)},
			app.DestinationHealth{FailingSince: at(5), LastError: "e2", NextTry: at(90)},
			app.DestinationHealth{FailingSince: at(1), LastError: "e2", NextTry: at(90)}},
		{"EarlierViewWins", app.DestinationHealth{FailingSince: at(5)}, app.DestinationHealth{FailingSince: at(1), LastError: "e"},
			app.DestinationHealth{FailingSince: at(1), LastError: "e"}},
		{"Recovery", app.DestinationHealth{FailingSince: at(1), LastError: "e", NextTry: at(60), Alerted: at(1)},
			app.DestinationHealth{RecoveredAt: at(30)}, app.DestinationHealth{RecoveredAt: at(30), Alerted: at(1)}},
		{"StaleView", app.DestinationHealth{RecoveredAt: at(30)}, app.DestinationHealth{FailingSince: at(1), LastError: "e", NextTry: at(40)},
			app.DestinationHealth{RecoveredAt: at(30)}},
		{"StaleViewOfNewEpisode", app.DestinationHealth{FailingSince: at(40), LastError: "e2", RecoveredAt: at(30)},
			app.DestinationHealth{FailingSince: at(1), LastError: "e1"},
			app.DestinationHealth{FailingSince: at(40), LastError: "e2", RecoveredAt: at(30)}},
		{"FailingFromTheRecovery", app.DestinationHealth{RecoveredAt: at(30)}, app.DestinationHealth{FailingSince: at(30), LastError: "e"},
			app.DestinationHealth{FailingSince: at(30), LastError: "e", RecoveredAt: at(30)}},
		{"NewEpisode", app.DestinationHealth{RecoveredAt: at(30)}, app.DestinationHealth{FailingSince: at(40), LastError: "e"},
			app.DestinationHealth{FailingSince: at(40), LastError: "e", RecoveredAt: at(30)}},
		{"OlderRecoveryKeepsNewer", app.DestinationHealth{RecoveredAt: at(30)}, app.DestinationHealth{RecoveredAt: at(20)},
			app.DestinationHealth{RecoveredAt: at(30)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := app.MergeHealth(tt.old, tt.view); got != tt.want {
				t.Errorf("MergeHealth(%+v, %+v) = %+v; want %+v", tt.old, tt.view, got, tt.want)
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
