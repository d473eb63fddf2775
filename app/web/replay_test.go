package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

// POST /api/v1/replay: a query without a filter, with a short q, or with a bad
// time is refused with 400 and the reason; delivered ones in the match
// need force (skipped without it, as the dry run's summary says); a dry
// run counts what the real run replays.
func TestReplayQuery_API(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	f.fill()
	for _, tc := range []struct{ body, want string }{
		{``, "give at least one of since, until, source, destination or status"},
		{`{}`, "give at least one of since, until, source, destination or status"},
		{`{"topic": "orders/*", "dry_run": true}`, "give at least one of since"},
		{`{"source": "shop", "q": "sk"}`, `q \"sk\": a body search needs at least 3 characters`},
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
	if _, answer := call(`{"since": "1h", "dry_run": true}`, 200); !strings.Contains(answer, `"summary":"9 match: 2 dead will be sent, 3 delivered skipped (\"force\": true sends them too), 4 pending left alone (on their way already)"`) {
		t.Fatalf("dry run's summary: %s", answer)
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

// The events page's filters offer "Replay these N deliveries", whose
// confirm page shows the count, the delivered ones among them and the
// first ones by their events; its button (with the CSRF token) replays
// them. The dead letters page names each delivery by its event.
func TestUI_ReplayByQuery(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	events := f.fill()
	c := &client{t: t, base: f.base, jar: map[string]string{}}
	if resp, _ := c.do("POST", "/login", url.Values{"user": {"ops"}, "password": {"pw-1234"}, "next": {"/events"}}); resp.StatusCode != 303 {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	_, page := c.do("GET", "/dead-letters", nil)
	dead := f.deliveryTo(events[0], "crm")
	if !strings.Contains(page, fmt.Sprintf("#%d", dead.ID)) || !strings.Contains(page, "shop/order-0</a> <span class=\"topic\">orders/create</span>") {
		t.Fatalf("dead letters page does not name the event:\n%s", page)
	}
	for _, tc := range []struct{ query, want string }{
		{"/events?source=shop", "Replay these 5 deliveries…"},
		{"/events?status=dead", "Replay these 2 deliveries…"},
		{"/events?status=delivered&topic=orders%2F%2A", "Replay these 3 deliveries…"},
	} {
		if _, page := c.do("GET", tc.query, nil); !strings.Contains(page, tc.want) || !strings.Contains(page, `action="/replay"`) {
			t.Errorf("%s: no %q offer", tc.query, tc.want)
		}
	}
	for _, q := range []string{"/events", "/events?topic=orders%2F%2A", "/events?status=pending", "/events?source=stripe-payments-europe"} {
		if _, page := c.do("GET", q, nil); strings.Contains(page, "Replay these") {
			t.Errorf("%s offers a replay", q)
		}
	}
	_, page = c.do("GET", "/events?source=shop", nil)
	tok := csrfOf(t, page)
	if resp, _ := c.do("POST", "/replay", url.Values{"source": {"shop"}, "confirm": {"yes"}}); resp.StatusCode != 403 {
		t.Fatalf("replay without CSRF: %d", resp.StatusCode)
	}
	// The confirm page says the split the CLI and the API say (issue 44),
	// and a button for each way.
	resp, page := c.do("POST", "/replay", url.Values{"csrf": {tok}, "source": {"shop"}})
	if resp.StatusCode != 200 || !strings.Contains(page, "9 match: 2 dead will be sent, 3 delivered skipped (“Send all” sends them too), 4 pending left alone (on their way already)") ||
		!strings.Contains(page, "3 of them were delivered already") ||
		!strings.Contains(page, "shop/order-0") || !strings.Contains(page, "orders/create") || !strings.Contains(page, fmt.Sprintf("#%d", dead.ID)) ||
		!strings.Contains(page, "Yes, send 2 dead deliveries again") || !strings.Contains(page, `name="delivered" value="yes">Send all 5, the 3 delivered again too`) {
		t.Fatalf("confirm page: %d\n%s", resp.StatusCode, page)
	}
	if n, _ := f.db.CountDead(context.Background()); n != 2 {
		t.Fatalf("the confirm page changed something: %d dead", n)
	}
	// A confirm without the delivered ones' button sends none of them.
	resp, _ = c.do("POST", "/replay", url.Values{"csrf": {tok}, "source": {"shop"}, "status": {"delivered"}, "confirm": {"yes"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || !strings.Contains(loc, "replayed=0") {
		t.Fatalf("replay of delivered ones without their button: %d to %q", resp.StatusCode, loc)
	}
	resp, _ = c.do("POST", "/replay", url.Values{"csrf": {tok}, "source": {"shop"}, "confirm": {"yes"}, "delivered": {"yes"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || !strings.Contains(loc, "replayed=5") || !strings.Contains(loc, "source=shop") {
		t.Fatalf("replay: %d to %q", resp.StatusCode, loc)
	}
	if n, _ := f.db.CountDead(context.Background()); n != 0 {
		t.Fatalf("%d dead after the replay", n)
	}
	if d, _, _ := f.db.Delivery(context.Background(), f.deliveryTo(events[1], "pos").ID); d.State != app.Pending {
		t.Fatalf("delivered one not replayed: %+v", d)
	}
	if _, page := c.do("GET", "/events?source=shop&replayed=5", nil); !strings.Contains(page, "Replayed 5: they are due now") {
		t.Fatal("events page does not say what was replayed")
	}
	// Replaying one delivered delivery asks, saying it was delivered.
	f.db.RecordAttempt(context.Background(), dead.ID, &app.Attempt{Start: f.now, Status: 200}, app.Delivered, time.Time{})
	_, page = c.do("POST", fmt.Sprintf("/deliveries/%d/replay", dead.ID), url.Values{"csrf": {tok}})
	if !strings.Contains(page, fmt.Sprintf("Send delivery #%d crm ← shop/order-0 orders/create again? It was delivered at ", dead.ID)) {
		t.Fatalf("confirm of a delivered one:\n%s", page)
	}
}

// A dry run says what its run does, forced or not (issue 43: the dry run
// said "would replay 6", the run then refused 5 of them): both go through
// the one selection, so selected, refused and the split by outcome
// (counts) are the run's. Without force the run sends the dead ones and
// skips the delivered ones, as the dry run's counts and summary say
// (issue 44: it refused them all, with 409).
func TestReplayQuery_DryRunSaysWhatTheRunDoes(t *testing.T) {
	type counts struct {
		DeadSent         int `json:"dead_sent"`
		DeliveredSent    int `json:"delivered_sent"`
		DeliveredSkipped int `json:"delivered_skipped"`
		PendingLeft      int `json:"pending_left"`
		NotFound         int `json:"not_found"`
		Changed          int `json:"changed"`
	}
	type result struct {
		Matched   int     `json:"matched"`
		Delivered int     `json:"delivered"`
		Selected  int     `json:"selected"`
		Refused   int     `json:"refused"`
		Replayed  int     `json:"replayed"`
		Counts    *counts `json:"counts"`
		Summary   string  `json:"summary"`
	}
	for _, tc := range []struct {
		name, query                           string
		matched, delivered, selected, refused int
		counts                                counts
		dry, run                              string
	}{
		{"Unforced", `"since": "1h"`, 5, 3, 2, 3, counts{DeadSent: 2, DeliveredSkipped: 3, PendingLeft: 4},
			`9 match: 2 dead will be sent, 3 delivered skipped ("force": true sends them too), 4 pending left alone (on their way already)`,
			`9 match: 2 dead sent, 3 delivered skipped ("force": true sends them too), 4 pending left alone (on their way already)`},
		{"Forced", `"since": "1h", "force": true`, 5, 3, 5, 0, counts{DeadSent: 2, DeliveredSent: 3, PendingLeft: 4},
			"9 match: 2 dead and 3 delivered will be sent, 4 pending left alone (on their way already)", "9 match: 2 dead and 3 delivered sent, 4 pending left alone (on their way already)"},
		{"DeadOnly", `"since": "1h", "status": "dead"`, 2, 0, 2, 0, counts{DeadSent: 2}, "2 match: 2 dead will be sent", "2 match: 2 dead sent"},
		{"DeliveredUnforced", `"source": "shop", "status": "delivered"`, 3, 3, 0, 3, counts{DeliveredSkipped: 3},
			`3 match: none will be sent, 3 delivered skipped ("force": true sends them too)`, `3 match: none sent, 3 delivered skipped ("force": true sends them too)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// 3 delivered to pos, 2 dead to crm; the 4 retrying ones are
			// never sent, and are said to be left alone when the query
			// asks for any state.
			f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
			f.fill()
			status, b := f.postJSON("/api/v1/replay", `{`+tc.query+`, "dry_run": true}`)
			var dry result
			if err := json.Unmarshal(b, &dry); status != 200 || err != nil {
				t.Fatalf("dry run: %d %s", status, b)
			}
			if dry.Matched != tc.matched || dry.Delivered != tc.delivered || dry.Selected != tc.selected || dry.Refused != tc.refused || dry.Replayed != 0 ||
				dry.Counts == nil || *dry.Counts != tc.counts || dry.Summary != tc.dry {
				t.Fatalf("dry run %s; want matched %d, delivered %d, selected %d, refused %d, counts %+v, %q", b, tc.matched, tc.delivered, tc.selected, tc.refused, tc.counts, tc.dry)
			}
			status, b = f.postJSON("/api/v1/replay", `{`+tc.query+`}`)
			var run result
			json.Unmarshal(b, &run)
			if status != 200 || run.Matched != dry.Matched || run.Selected != dry.Selected || run.Replayed != dry.Selected || run.Refused != dry.Refused ||
				run.Counts == nil || *run.Counts != *dry.Counts || run.Summary != tc.run {
				t.Fatalf("dry run %+v, run %d %s: they disagree", dry, status, b)
			}
			if n, _ := f.db.CountDead(context.Background()); n != 2-tc.counts.DeadSent {
				t.Fatalf("%d dead after the run; want %d", n, 2-tc.counts.DeadSent)
			}
		})
	}
}

// POST /api/v1/deliveries/replay: deliveries named by id, or one event's,
// replayed by the server's rule, which answers for each what it did
// (issue 44: hookbox replay ID… and -event decided on the client).
func TestReplayEach_API(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	events := f.fill()
	delivered, dead, pending := f.deliveryTo(events[0], "pos"), f.deliveryTo(events[0], "crm"), f.deliveryTo(events[0], "erp-warehouse-integration")
	type answer struct {
		Matched int `json:"matched"`
		Counts  struct {
			DeadSent         int `json:"dead_sent"`
			DeliveredSent    int `json:"delivered_sent"`
			DeliveredSkipped int `json:"delivered_skipped"`
			PendingLeft      int `json:"pending_left"`
			NotFound         int `json:"not_found"`
		} `json:"counts"`
		Summary string `json:"summary"`
		Items   []struct {
			ID      uint64 `json:"id"`
			Name    string `json:"name"`
			Outcome string `json:"outcome"`
			State   string `json:"state"`
		} `json:"items"`
	}
	call := func(body string) answer {
		t.Helper()
		status, b := f.postJSON("/api/v1/deliveries/replay", body)
		var a answer
		if err := json.Unmarshal(b, &a); status != 200 || err != nil {
			t.Fatalf("%s: %d %s", body, status, b)
		}
		return a
	}
	outcomes := func(a answer) string {
		var out []string
		for _, it := range a.Items {
			out = append(out, fmt.Sprintf("%d %s", it.ID, it.Outcome))
		}
		return strings.Join(out, ", ")
	}
	ids := fmt.Sprintf(`[%d, %d, %d, 987654]`, delivered.ID, dead.ID, pending.ID)
	want := fmt.Sprintf("%d skipped, %d sent, %d left, 987654 not_found", delivered.ID, dead.ID, pending.ID)
	say := `3 match: 1 dead will be sent, 1 delivered skipped ("force": true sends it too), 1 pending left alone (on its way already), 1 not found`
	dry := call(`{"ids": ` + ids + `, "dry_run": true}`)
	if got := outcomes(dry); got != want || dry.Summary != say || dry.Matched != 3 || dry.Counts.NotFound != 1 {
		t.Fatalf("dry run: %s, %q; want %s, %q", got, dry.Summary, want, say)
	}
	if d, _, _ := f.db.Delivery(context.Background(), dead.ID); d.State != app.Dead {
		t.Fatalf("the dry run changed the dead one: %v", d.State)
	}
	run := call(`{"ids": ` + ids + `}`)
	if got := outcomes(run); got != want || run.Summary != strings.Replace(say, "will be sent", "sent", 1) || run.Items[0].Name != fmt.Sprintf("#%d pos ← shop/order-0 orders/create", delivered.ID) {
		t.Fatalf("run: %s, %q; want %s", got, run.Summary, want)
	}
	if d, _, _ := f.db.Delivery(context.Background(), dead.ID); d.State != app.Pending {
		t.Fatalf("the dead one is %v after the run", d.State)
	}
	ev := call(`{"source": "shop", "event_id": "order-0", "force": true}`)
	if ev.Counts.DeliveredSent != 1 || ev.Counts.PendingLeft != 2 || ev.Matched != 3 {
		t.Fatalf("the event's deliveries, forced: %+v", ev)
	}
	for _, tc := range []struct {
		body   string
		status int
		want   string
	}{
		{`{}`, 400, "give ids, or source and event_id"},
		{`{"ids": [1], "source": "shop", "event_id": "x"}`, 400, "not both"},
		{`{"source": "shop"}`, 400, "give both source and event_id"},
		{`{"source": "shop", "event_id": "nope"}`, 404, "no event shop/nope is stored"},
	} {
		if status, b := f.postJSON("/api/v1/deliveries/replay", tc.body); status != tc.status || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s: %d %s; want %d saying %q", tc.body, status, b, tc.status, tc.want)
		}
	}
}
