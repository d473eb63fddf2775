package app_test

import (
	"testing"
	"time"

	"hookbox/app"
)

// The quiet rule: one source_quiet per episode, one source_active after
// it, none repeated however often it is asked, restart or not.
func TestSourceQuietAlert(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	h := time.Hour
	for _, tt := range []struct {
		name          string
		last, watched time.Time
		m             app.QuietMark
		now           time.Time
		want          string
		next          app.QuietMark
	}{
		{"Off", t0, t0, app.QuietMark{}, t0.Add(100 * h), "", app.QuietMark{}},
		{"NotYet", t0, t0, app.QuietMark{}, t0.Add(6*h - time.Second), "", app.QuietMark{}},
		{"Quiet", t0, t0, app.QuietMark{}, t0.Add(6 * h), app.AlertSourceQuiet, app.QuietMark{Since: t0, Quiet: true}},
		{"QuietToldAlready", t0, t0, app.QuietMark{Since: t0, Quiet: true}, t0.Add(60 * h), "", app.QuietMark{Since: t0, Quiet: true}},
		{"Active", t0.Add(7 * h), t0, app.QuietMark{Since: t0, Quiet: true}, t0.Add(7 * h), app.AlertSourceActive, app.QuietMark{Since: t0}},
		{"ActiveToldAlready", t0.Add(7 * h), t0, app.QuietMark{Since: t0}, t0.Add(8 * h), "", app.QuietMark{Since: t0}},
		{"NextEpisode", t0.Add(7 * h), t0, app.QuietMark{Since: t0}, t0.Add(13 * h), app.AlertSourceQuiet, app.QuietMark{Since: t0.Add(7 * h), Quiet: true}},
		{"NeverAccepted", time.Time{}, t0, app.QuietMark{}, t0.Add(6 * h), app.AlertSourceQuiet, app.QuietMark{Since: t0, Quiet: true}},
		{"NeverAcceptedRestarted", time.Time{}, t0.Add(50 * h), app.QuietMark{Since: t0, Quiet: true}, t0.Add(60 * h), "", app.QuietMark{Since: t0, Quiet: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			after := 6 * h
			if tt.name == "Off" {
				after = 0
			}
			got, next := app.SourceQuietAlert(tt.last, tt.watched, tt.m, tt.now, after)
			if got != tt.want || next != tt.next {
				t.Errorf("= %q, %+v; want %q, %+v", got, next, tt.want, tt.next)
			}
		})
	}
}
