package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// POST /api/v1/deliveries/{id}/retry makes a waiting delivery due now and
// names it; a dead or delivered one is 409 with the sentence, an unknown
// one 404. POST /api/v1/destinations/{name}/retry does all of one
// destination's, 404 for a name not in the config.
func TestAPI_RetryNow(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	f := openFixture(t, t.TempDir(), now, nil)
	events := f.fill()
	byDest := map[string]*app.Delivery{}
	ds, _ := f.db.EventDeliveries(context.Background(), events[1])
	for _, d := range ds {
		byDest[d.Destination] = d
	}
	erp, pos := byDest["erp-warehouse-integration"], byDest["pos"]

	t.Run("OK", func(t *testing.T) {
		status, body := f.post(fmt.Sprintf("/api/v1/deliveries/%d/retry", erp.ID))
		var got struct {
			Retried  int `json:"retried"`
			Delivery struct {
				ID          uint64    `json:"id"`
				Destination string    `json:"destination"`
				State       string    `json:"state"`
				Attempts    int       `json:"attempts"`
				Due         time.Time `json:"due"`
				Event       struct {
					Source, ID, Topic string
				} `json:"event"`
			} `json:"delivery"`
		}
		if err := json.Unmarshal(body, &got); status != 200 || err != nil {
			t.Fatalf("retry: %d %s, %v", status, body, err)
		}
		d := got.Delivery
		if got.Retried != 1 || d.ID != erp.ID || d.Destination != "erp-warehouse-integration" || d.State != "pending" || d.Attempts != 1 ||
			!d.Due.Equal(now) || d.Event.Source != "shop" || d.Event.ID != "order-1" || d.Event.Topic != "orders/create" {
			t.Fatalf("retry answered %s; want retried 1, due %v, the event named", body, now)
		}
		// Due already: nothing to move, said so.
		status, body = f.post(fmt.Sprintf("/api/v1/deliveries/%d/retry", erp.ID))
		if status != 200 || !strings.Contains(string(body), `"retried":0`) || !strings.Contains(string(body), "due already") {
			t.Fatalf("second retry: %d %s; want retried 0 and a note", status, body)
		}
	})
	t.Run("Delivered", func(t *testing.T) {
		status, body := f.post(fmt.Sprintf("/api/v1/deliveries/%d/retry", pos.ID))
		if status != 409 || !strings.Contains(string(body), fmt.Sprintf("delivery %d was delivered", pos.ID)) {
			t.Fatalf("retry of a delivered delivery: %d %s; want 409 with the reason", status, body)
		}
	})
	t.Run("Dead", func(t *testing.T) {
		_, dead := f.get("/api/v1/dead-letters")
		var dl struct {
			Items []struct {
				ID uint64 `json:"id"`
			} `json:"items"`
		}
		if err := json.Unmarshal(dead, &dl); err != nil || len(dl.Items) == 0 {
			t.Fatalf("dead letters: %s, %v", dead, err)
		}
		status, body := f.post(fmt.Sprintf("/api/v1/deliveries/%d/retry", dl.Items[0].ID))
		if want := fmt.Sprintf("delivery %d is dead: replay it instead", dl.Items[0].ID); status != 409 || !strings.Contains(string(body), want) {
			t.Fatalf("retry of a dead delivery: %d %s; want 409 %q", status, body, want)
		}
	})
	t.Run("NotFound", func(t *testing.T) {
		for _, path := range []string{"/api/v1/deliveries/99999999/retry", "/api/v1/deliveries/x/retry", "/api/v1/destinations/nowhere/retry"} {
			if status, body := f.post(path); status != 404 {
				t.Errorf("POST %s: %d %s; want 404", path, status, body)
			}
		}
	})
	t.Run("Destination", func(t *testing.T) {
		// crm has one waiting delivery (events[2]'s, due in 2 h).
		status, body := f.post("/api/v1/destinations/crm/retry")
		if status != 200 || !strings.Contains(string(body), `"retried":1`) || !strings.Contains(string(body), `"destination":"crm"`) {
			t.Fatalf("retry crm: %d %s; want retried 1", status, body)
		}
		if n, _, _ := f.db.DueDeliveries(context.Background(), "crm", now, 10, func(uint64) bool { return false }); len(n) != 1 {
			t.Fatalf("crm due now: %d; want 1", len(n))
		}
	})
}

// A retried delivery of an order group whose earlier delivery is pending
// is due, but the answer says it waits for that one.
func TestAPI_RetryNowOrdered(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	f := openFixture(t, t.TempDir(), now, nil)
	var ids []uint64
	for i := range 2 {
		e := &app.Event{Source: "shop", ID: fmt.Sprint("cust-update-", i), Topic: "customers/update", ReceivedAt: now, Body: []byte(`{}`)}
		plan := &app.Plan{Direct: []app.Direct{{Dest: "pos", Route: "customers", OrderKey: "cust-7"}}}
		if _, err := f.db.Accept(context.Background(), e, now.Add(time.Hour), plan); err != nil {
			t.Fatal(err)
		}
		ds, _ := f.db.EventDeliveries(context.Background(), e.Seq)
		ids = append(ids, ds[0].ID)
		if err := f.db.RecordAttempt(context.Background(), ds[0].ID, &app.Attempt{Start: now, Status: 503}, app.Pending, now.Add(30*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	status, body := f.post(fmt.Sprintf("/api/v1/deliveries/%d/retry", ids[1]))
	if want := fmt.Sprintf("in order after delivery %d of its group", ids[0]); status != 200 || !strings.Contains(string(body), `"retried":1`) || !strings.Contains(string(body), want) {
		t.Fatalf("retry of the second of a group: %d %s; want retried 1 and %q", status, body, want)
	}
	if status, body := f.post(fmt.Sprintf("/api/v1/deliveries/%d/retry", ids[0])); status != 200 || strings.Contains(string(body), "note") {
		t.Fatalf("retry of the head of a group: %d %s; want retried without a note", status, body)
	}
}
