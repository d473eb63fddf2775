package app_test

import (
	"testing"
	"time"

	"hookbox/app"
)

// Which deliveries a retry now moves, leaves or refuses, and the sentence
// of each refusal.
func TestRetryNowVerdict(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		d       app.Delivery
		due     bool
		refusal string
	}{
		{"Waiting", app.Delivery{ID: 7, State: app.Pending, Attempts: 1, Due: now.Add(30 * time.Minute)}, true, ""},
		{"DueAlready", app.Delivery{ID: 7, State: app.Pending, Attempts: 1, Due: now}, false, ""},
		{"Overdue", app.Delivery{ID: 7, State: app.Pending, Due: now.Add(-time.Second)}, false, ""},
		{"Dead", app.Delivery{ID: 7, State: app.Dead}, false, "delivery 7 is dead: replay it instead"},
		{"Delivered", app.Delivery{ID: 7, State: app.Delivered}, false,
			"delivery 7 was delivered: there is no retry to bring forward (replay it to send it again)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			due, err := app.RetryNowVerdict(&tc.d, now)
			if due != tc.due {
				t.Errorf("due = %v, want %v", due, tc.due)
			}
			switch {
			case tc.refusal == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.refusal != "" && (app.ErrorCode(err) != app.ECONFLICT || app.ErrorMessage(err) != tc.refusal):
				t.Errorf("err = %v; want %s %q", err, app.ECONFLICT, tc.refusal)
			}
		})
	}
}
