package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// postJSON posts body (JSON) to path with Basic auth and returns the
// status and the answer.
func (f *fixture) postJSON(path, body string) (int, []byte) {
	f.t.Helper()
	req, _ := http.NewRequest("POST", f.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("ops", "pw-1234")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// deliveryTo returns the delivery of event seq to dest.
func (f *fixture) deliveryTo(seq uint64, dest string) *app.Delivery {
	f.t.Helper()
	ds, err := f.db.EventDeliveries(context.Background(), seq)
	if err != nil {
		f.t.Fatal(err)
	}
	for _, d := range ds {
		if d.Destination == dest {
			return d
		}
	}
	f.t.Fatalf("event %d has no delivery to %s", seq, dest)
	return nil
}

// Re-sending a delivered delivery needs {"force": true}: without it the
// answer is 409 with a sentence that names the delivery and says what to
// send; a dead one needs no force.
func TestReplay_DeliveredNeedsForce(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	events := f.fill()
	delivered := f.deliveryTo(events[0], "pos")
	for _, path := range []string{"/api/v1/deliveries/%d/replay", "/api/v1/dead-letters/%d/replay"} {
		p := fmt.Sprintf(path, delivered.ID)
		for _, body := range []string{"", `{}`, `{"force": false}`} {
			status, answer := f.postJSON(p, body)
			if status != http.StatusConflict {
				t.Fatalf("%s %q: %d %s; want 409", p, body, status, answer)
			}
			want := fmt.Sprintf("delivery #%d pos ← shop/order-0 orders/create was delivered at ", delivered.ID)
			if !strings.Contains(string(answer), want) || !strings.Contains(string(answer), `send {\"force\": true} to send it again`) {
				t.Fatalf("409 answer %s; want it to say %q and how to force", answer, want)
			}
		}
		if d, _, _ := f.db.Delivery(context.Background(), delivered.ID); d.State != app.Delivered {
			t.Fatalf("refused replay changed the delivery: %+v", d)
		}
	}
	status, answer := f.postJSON(fmt.Sprintf("/api/v1/deliveries/%d/replay", delivered.ID), `{"force": true}`)
	if status != 200 || !strings.Contains(string(answer), `"was":"delivered"`) {
		t.Fatalf("forced replay: %d %s", status, answer)
	}
	if d, _, _ := f.db.Delivery(context.Background(), delivered.ID); d.State != app.Pending {
		t.Fatalf("forced replay left %+v", d)
	}
	dead := f.deliveryTo(events[1], "crm")
	status, answer = f.post(fmt.Sprintf("/api/v1/dead-letters/%d/replay", dead.ID))
	if status != 200 || !strings.Contains(string(answer), fmt.Sprintf(`"name":"#%d crm ← shop/order-1 orders/create"`, dead.ID)) {
		t.Fatalf("replay of a dead one without force: %d %s", status, answer)
	}
	if status, answer := f.postJSON(fmt.Sprintf("/api/v1/deliveries/%d/replay", dead.ID), `{"forse": true}`); status != 400 ||
		!strings.Contains(string(answer), `unknown field`) {
		t.Fatalf("misspelt field: %d %s; want 400 naming it", status, answer)
	}
}

// The dead letters list names each delivery by its event.
func TestDeadLetters_Named(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	f.fill()
	_, body := f.get("/api/v1/dead-letters")
	var dl struct {
		Items []struct {
			ID      uint64 `json:"id"`
			Source  string `json:"source"`
			EventID string `json:"event_id"`
			Topic   string `json:"topic"`
			Name    string `json:"name"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &dl); err != nil || len(dl.Items) != 2 {
		t.Fatalf("dead letters %s, %v", body, err)
	}
	for i, it := range dl.Items {
		if it.Source != "shop" || it.EventID != fmt.Sprint("order-", i) || it.Topic != "orders/create" ||
			it.Name != fmt.Sprintf("#%d crm ← shop/order-%d orders/create", it.ID, i) {
			t.Fatalf("dead letter %+v", it)
		}
	}
}

// POST /api/v1/replay: a query without a filter, with q, or with a bad
// time is refused with 400 and the reason; delivered ones in the match
// need force (409 with the count); a dry run counts what the real run
// replays.
func TestReplayQuery_API(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	f.fill()
	for _, tc := range []struct{ body, want string }{
		{``, "give at least one of since, until, source, destination or status"},
		{`{}`, "give at least one of since, until, source, destination or status"},
		{`{"topic": "orders/*", "dry_run": true}`, "give at least one of since"},
		{`{"source": "shop", "q": "sku-1"}`, "body search (q) needs the event search of issue 29"},
		{`{"since": "yesterday"}`, `since \"yesterday\": give an RFC 3339 time`},
		{`{"status": "pending"}`, `status \"pending\": use dead, delivered or any`},
		{`{"destination": "nope"}`, `destination \"nope\" is not in the config`},
		{`{"source": "shop", "sorce": "x"}`, `unknown field \"sorce\"`},
		{`[1]`, "the body is not the JSON this route takes"},
	} {
		status, answer := f.postJSON("/api/v1/replay", tc.body)
		if status != 400 || !strings.Contains(string(answer), tc.want) {
			t.Errorf("%s: %d %s; want 400 saying %q", tc.body, status, answer, tc.want)
		}
	}
	type result struct {
		Matched   int  `json:"matched"`
		Delivered int  `json:"delivered"`
		Replayed  int  `json:"replayed"`
		More      bool `json:"more"`
		First     []struct {
			Delivery uint64 `json:"delivery"`
			Name     string `json:"name"`
			State    string `json:"state"`
		} `json:"first"`
	}
	call := func(body string, wantStatus int) (r result, answer string) {
		t.Helper()
		status, b := f.postJSON("/api/v1/replay", body)
		if status != wantStatus {
			t.Fatalf("%s: %d %s; want %d", body, status, b, wantStatus)
		}
		json.Unmarshal(b, &r)
		return r, string(b)
	}
	// 3 delivered to pos, 2 dead to crm; the retrying ones never match.
	dry, _ := call(`{"since": "1h", "dry_run": true}`, 200)
	if dry.Matched != 5 || dry.Delivered != 3 || dry.Replayed != 0 || dry.More || len(dry.First) != 5 {
		t.Fatalf("dry run = %+v", dry)
	}
	if _, answer := call(`{"since": "1h"}`, 409); !strings.Contains(answer, `3 of the 5 matched deliveries were delivered already; add \"force\": true`) {
		t.Fatalf("409 answer %s", answer)
	}
	dead, _ := call(`{"since": "1h", "destination": "crm"}`, 200) // only dead ones: no force needed
	if dead.Matched != 2 || dead.Replayed != 2 || dead.First[0].State != "dead" || !strings.Contains(dead.First[0].Name, "crm ← shop/order-0 orders/create") {
		t.Fatalf("replay of the dead ones = %+v", dead)
	}
	dry, _ = call(`{"status": "delivered", "source": "shop", "dry_run": true}`, 200)
	real, _ := call(`{"status": "delivered", "source": "shop", "force": true}`, 200)
	if dry.Matched != 3 || real.Matched != dry.Matched || real.Replayed != dry.Matched {
		t.Fatalf("dry run %+v, real run %+v; want the same 3", dry, real)
	}
	if none, _ := call(`{"status": "any", "until": "`+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)+`"}`, 200); none.Matched != 0 || none.Replayed != 0 {
		t.Fatalf("until an hour ago = %+v", none)
	}
}
