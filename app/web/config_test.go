package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/web"
)

// A delivery to a destination the config in force does not have (a
// reload removed it) is listed with the note that says so; one to a
// configured destination has none. GET /api/v1/config says which config
// runs.
func TestAPI_DestinationNoLongerConfigured(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	f := openFixture(t, t.TempDir(), now, nil)
	e := &app.Event{Source: "shop", ID: "o-1", Topic: "orders/create", ReceivedAt: now, Body: []byte(`{}`)}
	plan := &app.Plan{Direct: []app.Direct{{Dest: "pos", Route: "r"}, {Dest: "gone", Route: "r"}}}
	if _, err := f.db.Accept(context.Background(), e, now.Add(time.Hour), plan); err != nil {
		t.Fatal(err)
	}
	ds, err := f.db.EventDeliveries(context.Background(), e.Seq)
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries: %v, %v", ds, err)
	}
	for _, d := range ds {
		_, raw := f.get(fmt.Sprintf("/api/v1/deliveries/%d", d.ID))
		var j struct {
			Destination string `json:"destination"`
			Note        string `json:"note"`
		}
		if err := json.Unmarshal(raw, &j); err != nil {
			t.Fatal(err)
		}
		want := ""
		if j.Destination == "gone" {
			want = web.NoteUnconfigured
		}
		if j.Note != want {
			t.Errorf("delivery to %s: note %q; want %q", j.Destination, j.Note, want)
		}
	}
	_, raw := f.get("/api/v1/config")
	var c struct {
		Path         string    `json:"path"`
		LoadedAt     time.Time `json:"loaded_at"`
		Destinations int       `json:"destinations"`
		Refused      any       `json:"refused"`
	}
	if err := json.Unmarshal(raw, &c); err != nil || c.Path == "" || c.LoadedAt.IsZero() || c.Destinations != 3 || c.Refused != nil {
		t.Fatalf("GET /api/v1/config: %s (%v)", raw, err)
	}
}
