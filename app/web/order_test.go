package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// A delivery of an order group shows its route and order key, on the
// event page and in the API; the one after a dead delivery of its group
// says it went out after it; the first of the group says nothing of the
// kind.
func TestOrder_PageAndAPI(t *testing.T) {
	now := time.Now()
	f := openFixture(t, t.TempDir(), now, slog.New(slog.DiscardHandler))
	var ids, seqs []uint64
	for i := range 2 {
		e := &app.Event{Source: "shop", ID: fmt.Sprint("cust-update-", i), Topic: "customers/update", ReceivedAt: now, Body: []byte(`{}`)}
		plan := &app.Plan{Direct: []app.Direct{{Dest: "pos", Route: "customers", OrderKey: "cust<7>"}}}
		if _, err := f.db.Accept(context.Background(), e, now.Add(time.Hour), plan); err != nil {
			t.Fatal(err)
		}
		ds, err := f.db.EventDeliveries(context.Background(), e.Seq)
		if err != nil || len(ds) != 1 {
			t.Fatalf("deliveries: %+v, %v", ds, err)
		}
		ids, seqs = append(ids, ds[0].ID), append(seqs, e.Seq)
	}
	if err := f.db.RecordAttempt(context.Background(), ids[0], &app.Attempt{Start: now, Status: 410, Error: "HTTP 410"}, app.Dead, time.Time{}); err != nil {
		t.Fatal(err)
	}
	note := fmt.Sprintf("went out after delivery #%d, which is dead", ids[0])
	for i, seq := range seqs {
		code, page := f.get(fmt.Sprint("/events/", seq))
		if code != 200 || !strings.Contains(string(page), "key <code>cust&lt;7&gt;</code> of route customers") {
			t.Fatalf("event page %d: %d, no order key (escaped) in %s", seq, code, page)
		}
		if said := strings.Contains(string(page), note); said != (i == 1) {
			t.Fatalf("event page of delivery %d says %q: %v, want %v", ids[i], note, said, i == 1)
		}
		code, raw := f.get(fmt.Sprint("/api/v1/deliveries/", ids[i]))
		var j struct {
			Route     string `json:"route"`
			OrderKey  string `json:"order_key"`
			AfterDead uint64 `json:"after_dead"`
		}
		if err := json.Unmarshal(raw, &j); code != 200 || err != nil {
			t.Fatalf("delivery %d: %d, %v: %s", ids[i], code, err, raw)
		}
		want := uint64(0)
		if i == 1 {
			want = ids[0]
		}
		if j.Route != "customers" || j.OrderKey != "cust<7>" || j.AfterDead != want {
			t.Fatalf("delivery %d JSON %+v; want route customers, order key cust<7>, after_dead %d", ids[i], j, want)
		}
	}
}
