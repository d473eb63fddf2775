package app_test

import (
	"testing"

	"hookbox/app"
)

// The outcomes' names are the HTTP answer's status and the request
// metric's outcome label: dashboards and senders read them, so they stay.
func TestOutcome_String(t *testing.T) {
	for o, want := range map[app.Outcome]string{
		app.Accepted:   "accepted",
		app.Duplicate:  "duplicate",
		app.Ping:       "ping",
		app.Rejected:   "rejected",
		app.Invalid:    "invalid",
		app.Failed:     "failed",
		app.Outcome(0): "unknown",
	} {
		if got := o.String(); got != want {
			t.Errorf("Outcome(%d) = %q; want %q", int(o), got, want)
		}
	}
}
