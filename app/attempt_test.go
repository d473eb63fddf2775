package app_test

import (
	"slices"
	"testing"
	"time"

	"hookbox/app"
)

// The attempt rule, by table: every outcome an attempt can come to.
func TestDecideAttempt(t *testing.T) {
	end := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	dest := &app.Destination{Name: "pos", Retry: []time.Duration{time.Minute, time.Hour}}
	waiting := &app.Delivery{Tries: 1, Due: end.Add(30 * time.Minute)}
	for _, tt := range []struct {
		name  string
		dl    *app.Delivery
		res   app.Answer
		early bool
		// want: the state, and the due time and the hold's end as waits
		// after end (-1: zero); for a scheduled retry, the bounds of its
		// jitter.
		state          app.DeliveryState
		dueMin, dueMax time.Duration
		held           time.Duration
		refused        bool
	}{
		{"Delivered", &app.Delivery{}, app.Answer{Delivered: true, Status: 200}, false, app.Delivered, -1, -1, -1, false},
		{"DeliveredIgnoresRetryAfter", &app.Delivery{}, app.Answer{Delivered: true, RetryAfter: time.Second}, false, app.Delivered, -1, -1, -1, false},
		{"FirstStep", &app.Delivery{}, app.Answer{Status: 500}, false, app.Pending, 48 * time.Second, 72 * time.Second, -1, false},
		{"SecondStep", &app.Delivery{Tries: 1}, app.Answer{Status: 500}, false, app.Pending, 48 * time.Minute, 72 * time.Minute, -1, false},
		{"ScheduleDone", &app.Delivery{Tries: 2}, app.Answer{Status: 500}, false, app.Dead, -1, -1, -1, false},
		{"Refused", &app.Delivery{}, app.Answer{Status: 410, Refused: true}, false, app.Dead, -1, -1, -1, true},
		{"RefusedEarly", waiting, app.Answer{Refused: true}, true, app.Dead, -1, -1, -1, true},
		{"RetryAfter", &app.Delivery{}, app.Answer{Status: 429, RetryAfter: 3 * time.Second}, false, app.Pending, 3 * time.Second, 3 * time.Second, 3 * time.Second, false},
		{"RetryAfterCapped", &app.Delivery{}, app.Answer{Status: 503, RetryAfter: 48 * time.Hour}, false, app.Pending, time.Hour, time.Hour, time.Hour, false},
		{"RetryAfterLastStep", &app.Delivery{Tries: 2}, app.Answer{Status: 429, RetryAfter: time.Second}, false, app.Dead, -1, -1, time.Second, false},
		{"EarlyKeepsStep", waiting, app.Answer{Status: 503}, true, app.Pending, 30 * time.Minute, 30 * time.Minute, -1, false},
		{"EarlyHeld", waiting, app.Answer{Status: 429, RetryAfter: 5 * time.Second}, true, app.Pending, 30 * time.Minute, 30 * time.Minute, 5 * time.Second, false},
		{"EarlyDelivered", waiting, app.Answer{Delivered: true}, true, app.Delivered, -1, -1, -1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := app.DecideAttempt(dest, tt.dl, tt.res, end, tt.early)
			at := func(d time.Duration) time.Time {
				if d < 0 {
					return time.Time{}
				}
				return end.Add(d)
			}
			if o.State != tt.state || o.Refused != tt.refused || !o.HeldUntil.Equal(at(tt.held)) {
				t.Fatalf("outcome = %+v; want state %v, refused %v, held until %v", o, tt.state, tt.refused, at(tt.held))
			}
			if tt.dueMin < 0 {
				if !o.Due.IsZero() {
					t.Fatalf("due %v, want none", o.Due)
				}
			} else if o.Due.Before(at(tt.dueMin)) || o.Due.After(at(tt.dueMax)) {
				t.Fatalf("due %v after the end, want %v to %v", o.Due.Sub(end), tt.dueMin, tt.dueMax)
			}
		})
	}
}

// The number a destination is told is its step in the schedule plus one,
// whatever probes came before: with 2 retries, 1 to 3, never more.
func TestAttemptNumber(t *testing.T) {
	for _, tt := range []struct{ tries, attempts, want int }{{0, 0, 1}, {1, 1, 2}, {1, 3, 2}, {2, 5, 3}} {
		if got := app.AttemptNumber(&app.Delivery{Tries: tt.tries, Attempts: tt.attempts}); got != tt.want {
			t.Errorf("AttemptNumber(tries %d, attempts %d) = %d, want %d", tt.tries, tt.attempts, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := app.Backoff{First: time.Second, Max: 10 * time.Second}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, b.Wait(n))
	}
	if want := []time.Duration{1e9, 2e9, 4e9, 8e9, 10e9, 10e9}; !slices.Equal(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
	if got := b.Next(4 * time.Second); got != 8*time.Second {
		t.Fatalf("Next(4s) = %v, want 8s", got)
	}
	if got := b.Next(8 * time.Second); got != 10*time.Second {
		t.Fatalf("Next(8s) = %v, want the cap", got)
	}
	huge := app.Backoff{First: time.Second, Max: 1<<63 - 1}
	if got := huge.Next(1 << 62); got != huge.Max {
		t.Fatalf("Next near the largest Duration = %v, want the cap, not a wrapped value", got)
	}
	if got := huge.Wait(1000); got != huge.Max {
		t.Fatalf("Wait(1000) = %v, want the cap", got)
	}
}
