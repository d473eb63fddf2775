package cli

import (
	"log/slog"
	"testing"

	"hookbox/app"
)

// A reload schedules again the jobs whose cron spec changed, and only
// those: the sweep at its new spec, the alert check left as it was.
func TestReloader_Reschedule(t *testing.T) {
	sched := newCron(slog.New(slog.DiscardHandler))
	r := &reloader{sched: sched, logger: slog.New(slog.DiscardHandler)}
	old := &app.Config{Path: "c.toml", Retention: app.RetentionConfig{Sweep: "@hourly"}, Alerts: app.AlertsConfig{Check: "@every 1m"}}
	sweep := &cronJob{key: "retention.sweep", spec: func(c *app.Config) string { return c.Retention.Sweep }, run: func() {}}
	check := &cronJob{key: "alerts.check", spec: func(c *app.Config) string { return c.Alerts.Check }, run: func() {}}
	for _, j := range []*cronJob{sweep, check} {
		if err := r.schedule(old, j); err != nil {
			t.Fatal(err)
		}
	}
	sweepID, checkID := sweep.id, check.id
	next := &app.Config{Path: "c.toml", Retention: app.RetentionConfig{Sweep: "@every 5m"}, Alerts: app.AlertsConfig{Check: "@every 1m"}}
	r.reschedule(old, next)
	if sweep.id == sweepID || check.id != checkID {
		t.Fatalf("entries: sweep %d → %d, check %d → %d; want the sweep's replaced, the check's kept", sweepID, sweep.id, checkID, check.id)
	}
	if n := len(sched.Entries()); n != 2 {
		t.Fatalf("%d entries; want 2 (the old sweep removed)", n)
	}
	if got := sched.Entry(sweep.id).Schedule; got == nil {
		t.Fatal("the new sweep is not scheduled")
	}
	if sched.Entry(sweepID).ID != 0 {
		t.Fatal("the old sweep is still scheduled")
	}
}
