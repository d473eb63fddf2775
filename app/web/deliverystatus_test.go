package web_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"testing"
	"time"
)

// deliveryShownRe finds, on an event page, each delivery's id and the
// word the page shows for it.
var deliveryShownRe = regexp.MustCompile(`<h3>[^<]* — <span class="status ([a-z]+)"[^>]*>[a-z]+</span> <small>delivery (\d+),`)

// A delivery in the API has the word the pages show for it as status
// ("failing" for a pending one that has had an attempt), beside its state
// as it was: in /api/v1/deliveries/{id}, an event's deliveries and the
// dead letters. On the old main the API had only state, "pending" where
// the page said "failing".
func TestAPI_DeliveryStatusWord(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	seqs := f.fill() // delivered, failing and dead deliveries
	if r := f.send("order-new", "orders/create", `{"id": 9}`); r.StatusCode != 200 {
		t.Fatalf("send: %d", r.StatusCode)
	}
	_, fresh, _, _ := f.db.LookupID(t.Context(), "shop", "order-new")
	seqs = append(seqs, fresh) // pending ones, never tried

	type delivery struct {
		ID       uint64 `json:"id"`
		State    string `json:"state"`
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	}
	get := func(path string, v any) {
		t.Helper()
		code, b := f.get(path)
		if err := json.Unmarshal(b, v); code != 200 || err != nil {
			t.Fatalf("GET %s: %d %v: %s", path, code, err, b)
		}
	}
	seen := map[string]int{}
	for _, seq := range seqs {
		_, page := f.get(fmt.Sprintf("/events/%d", seq))
		shown := map[string]string{}
		for _, m := range deliveryShownRe.FindAllStringSubmatch(string(page), -1) {
			shown[m[2]] = m[1]
		}
		var ev struct {
			Deliveries []delivery `json:"deliveries"`
		}
		get(fmt.Sprintf("/api/v1/events/%d", seq), &ev)
		if len(ev.Deliveries) == 0 || len(shown) != len(ev.Deliveries) {
			t.Fatalf("event %d: the API has %d deliveries, the page shows %v", seq, len(ev.Deliveries), shown)
		}
		for _, d := range ev.Deliveries {
			var one delivery
			get(fmt.Sprintf("/api/v1/deliveries/%d", d.ID), &one)
			word := shown[fmt.Sprint(d.ID)]
			if d.Status != word || one.Status != word {
				t.Errorf("delivery %d: status %q in the event, %q alone; the page shows %q", d.ID, d.Status, one.Status, word)
			}
			wantState := word
			if word == "failing" {
				wantState = "pending"
			}
			if one.State != wantState {
				t.Errorf("delivery %d: state %q; want %q as before", d.ID, one.State, wantState)
			}
			seen[word]++
		}
	}
	for _, w := range []string{"pending", "failing", "delivered", "dead"} {
		if seen[w] == 0 {
			t.Errorf("the fixture has no delivery shown as %s: %v", w, seen)
		}
	}
	var dead struct {
		Items []delivery `json:"items"`
	}
	get("/api/v1/dead-letters", &dead)
	for _, d := range dead.Items {
		if d.Status != "dead" {
			t.Errorf("dead letter %d: status %q", d.ID, d.Status)
		}
	}
}
