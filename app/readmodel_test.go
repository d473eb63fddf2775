package app_test

import (
	"testing"
	"time"

	"hookbox/app"
)

// The rule both stores replay by: status, source, topic glob, destination
// and the received time each narrow the match; pending is never taken.
func TestReplayQuery_Matches(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	n := app.EventName{Source: "shop", ID: "wh-1004", Topic: "orders/create"}
	dead := &app.Delivery{ID: 7, Destination: "pos", State: app.Dead}
	delivered := &app.Delivery{ID: 8, Destination: "pos", State: app.Delivered}
	pending := &app.Delivery{ID: 9, Destination: "pos", State: app.Pending}
	for _, tc := range []struct {
		name string
		q    app.ReplayQuery
		d    *app.Delivery
		want bool
	}{
		{"AnyDead", app.ReplayQuery{}, dead, true},
		{"AnyDelivered", app.ReplayQuery{Status: app.ReplayAny}, delivered, true},
		{"NeverPending", app.ReplayQuery{Status: app.ReplayAny}, pending, false},
		{"DeadOnly", app.ReplayQuery{Status: app.ReplayDead}, delivered, false},
		{"DeliveredOnly", app.ReplayQuery{Status: app.ReplayDelivered}, dead, false},
		{"Source", app.ReplayQuery{Source: "shop"}, dead, true},
		{"OtherSource", app.ReplayQuery{Source: "pay"}, dead, false},
		{"TopicGlob", app.ReplayQuery{Topic: "orders/*"}, dead, true},
		{"OtherTopic", app.ReplayQuery{Topic: "refunds/*"}, dead, false},
		{"Destination", app.ReplayQuery{Destination: "erp"}, dead, false},
		{"SinceInclusive", app.ReplayQuery{Since: t0}, dead, true},
		{"SinceAfter", app.ReplayQuery{Since: t0.Add(time.Nanosecond)}, dead, false},
		{"UntilInclusive", app.ReplayQuery{Until: t0}, dead, true},
		{"UntilBefore", app.ReplayQuery{Until: t0.Add(-time.Nanosecond)}, dead, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := tc.q.Check()
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Matches(tc.d, n, t0); got != tc.want {
				t.Fatalf("Matches = %v, want %v", got, tc.want)
			}
		})
	}
}

// The pending deliveries a replay leaves alone and says so (issue 44):
// those its filters select when it asks for any state, never a finished
// one.
func TestReplayQuery_Leaves(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	n := app.EventName{Source: "shop", ID: "wh-1004", Topic: "orders/create"}
	pending := &app.Delivery{ID: 9, Destination: "pos", State: app.Pending}
	for _, tc := range []struct {
		name string
		q    app.ReplayQuery
		d    *app.Delivery
		want bool
	}{
		{"Any", app.ReplayQuery{}, pending, true},
		{"NotDead", app.ReplayQuery{}, &app.Delivery{ID: 7, Destination: "pos", State: app.Dead}, false},
		{"DeadOnly", app.ReplayQuery{Status: app.ReplayDead}, pending, false},
		{"DeliveredOnly", app.ReplayQuery{Status: app.ReplayDelivered}, pending, false},
		{"OtherSource", app.ReplayQuery{Source: "pay"}, pending, false},
		{"OtherDestination", app.ReplayQuery{Destination: "erp"}, pending, false},
		{"OtherDelivery", app.ReplayQuery{Delivery: 7}, pending, false},
		{"Since", app.ReplayQuery{Since: t0}, pending, true},
		{"SinceAfter", app.ReplayQuery{Since: t0.Add(time.Second)}, pending, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := tc.q.Check()
			if err != nil {
				t.Fatal(err)
			}
			if got := q.Leaves(tc.d, n, t0); got != tc.want {
				t.Fatalf("Leaves = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestReplayQuery_Check(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	q, err := app.ReplayQuery{Limit: 5 * app.MaxReplay}.Check()
	if err != nil || q.Status != app.ReplayAny || q.Limit != app.MaxReplay {
		t.Fatalf("defaults: %+v, %v", q, err)
	}
	if _, err := (app.ReplayQuery{Status: "pending"}).Check(); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("status pending: %v", err)
	}
	if _, err := (app.ReplayQuery{Since: t0, Until: t0.Add(-time.Hour)}).Check(); app.ErrorCode(err) != app.EINVALID {
		t.Fatalf("until before since: %v", err)
	}
	if (app.ReplayQuery{Topic: "orders/*"}).Filtered() || !(app.ReplayQuery{Status: "any"}).Filtered() || !(app.ReplayQuery{Since: t0}).Filtered() {
		t.Fatal("Filtered: a topic alone is not a filter; a status or a time is")
	}
}

func TestDeliveryName(t *testing.T) {
	for _, tc := range []struct {
		n    app.EventName
		want string
	}{
		{app.EventName{Source: "shop", ID: "wh-1004", Topic: "orders/create"}, "#7 pos ← shop/wh-1004 orders/create"},
		{app.EventName{Source: "shop", ID: "wh-1004"}, "#7 pos ← shop/wh-1004"},
		{app.EventName{}, "#7 pos"},
	} {
		if got := app.DeliveryName(7, "pos", tc.n); got != tc.want {
			t.Errorf("DeliveryName(%+v) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
