package app_test

import (
	"slices"
	"strings"
	"testing"

	"hookbox/app"
)

func TestStateWords_Delivery(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    app.Delivery
		want string
	}{
		{"PendingNoAttempt", app.Delivery{State: app.Pending}, app.StatePending},
		{"PendingAfterAttempt", app.Delivery{State: app.Pending, Attempts: 1, Tries: 1}, app.StateFailing},
		{"PendingAfterProbe", app.Delivery{State: app.Pending, Attempts: 1}, app.StateFailing},
		{"Delivered", app.Delivery{State: app.Delivered, Attempts: 3}, app.StateDelivered},
		{"Dead", app.Delivery{State: app.Dead, Attempts: 5}, app.StateDead},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := app.DeliveryWord(&tt.d); got != tt.want {
				t.Errorf("DeliveryWord = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStateWords_Event(t *testing.T) {
	pending := &app.Delivery{State: app.Pending}
	failing := &app.Delivery{State: app.Pending, Attempts: 2}
	delivered := &app.Delivery{State: app.Delivered, Attempts: 1}
	dead := &app.Delivery{State: app.Dead, Attempts: 1}
	for _, tt := range []struct {
		name string
		ds   []*app.Delivery
		want string
	}{
		{"None", nil, ""},
		{"Delivered", []*app.Delivery{delivered, delivered}, app.StateDelivered},
		{"PendingBeatsDelivered", []*app.Delivery{delivered, pending}, app.StatePending},
		{"FailingBeatsPending", []*app.Delivery{pending, failing, delivered}, app.StateFailing},
		{"DeadBeatsFailing", []*app.Delivery{failing, dead, pending}, app.StateDead},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := app.EventWord(tt.ds); got != tt.want {
				t.Errorf("EventWord = %q, want %q", got, tt.want)
			}
		})
	}
}

// Every word a delivery or an event can show is a filter; anything else is
// refused with a message that names them all.
func TestStateWords_CheckEventStatus(t *testing.T) {
	for _, w := range append(append([]string{""}, app.EventStates...), app.DeliveryStates...) {
		if err := app.CheckEventStatus(w); err != nil {
			t.Errorf("CheckEventStatus(%q) = %v", w, err)
		}
	}
	for _, w := range []string{"retrying", "Failing", "any", "pending,dead"} {
		err := app.CheckEventStatus(w)
		if app.ErrorCode(err) != app.EINVALID {
			t.Fatalf("CheckEventStatus(%q) = %v; want invalid", w, err)
		}
		for _, valid := range app.EventStates {
			if !strings.Contains(app.ErrorMessage(err), valid) {
				t.Errorf("CheckEventStatus(%q)'s message %q does not name %s", w, app.ErrorMessage(err), valid)
			}
		}
	}
}

func TestStateWords_Destination(t *testing.T) {
	for _, tt := range []struct {
		paused, held, failing bool
		want                  string
	}{
		{false, false, false, app.DestDelivering},
		{false, false, true, app.DestFailing},
		{false, true, true, app.DestHeld},
		{true, true, true, app.DestPaused},
		{true, false, false, app.DestPaused},
	} {
		got := app.DestinationWord(tt.paused, tt.held, tt.failing)
		if got != tt.want {
			t.Errorf("DestinationWord(paused %v, held %v, failing %v) = %q, want %q", tt.paused, tt.held, tt.failing, got, tt.want)
		}
		if !slices.Contains(app.DestinationStates, got) {
			t.Errorf("%q is not one of DestinationStates %v", got, app.DestinationStates)
		}
	}
}
