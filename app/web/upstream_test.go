package web_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// The upstream API (issue 45): a check now answers what it found (here
// the provider's API cannot be reached: shown, not a 5xx), the source's
// last check is served after it, and both the asking and what the check
// did are audited; a source without the table, or none, is refused.
func TestAPI_Upstream(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	code, body := f.get("/api/v1/sources/stripe-payments-europe/upstream")
	if code != 200 || !strings.Contains(string(body), `"last_check":null`) || !strings.Contains(string(body), `"check":"@every 10m"`) {
		t.Fatalf("before any check: %d %s", code, body)
	}
	code, body = f.post("/api/v1/sources/stripe-payments-europe/upstream/check")
	var got struct {
		Checks []app.UpstreamCheck `json:"checks"`
	}
	if code != 200 || json.Unmarshal(body, &got) != nil || len(got.Checks) != 1 {
		t.Fatalf("check: %d %s", code, body)
	}
	c := got.Checks[0]
	if c.Source != "stripe-payments-europe" || c.Provider != "stripe" || c.By != "ops" ||
		!strings.Contains(c.Error, "GET /v1/webhook_endpoints/we_1: ") {
		t.Errorf("check = %+v; want the source's, by ops, with the failed call", c)
	}
	code, body = f.get("/api/v1/sources/stripe-payments-europe/upstream")
	var last struct {
		LastCheck *app.UpstreamCheck `json:"last_check"`
	}
	if code != 200 || json.Unmarshal(body, &last) != nil || last.LastCheck == nil || last.LastCheck.Error != c.Error {
		t.Errorf("after the check: %d %s", code, body)
	}
	for _, b := range [][]byte{body} {
		if strings.Contains(string(b), "fixture0key") {
			t.Errorf("the key in an answer: %s", b)
		}
	}
	for path, want := range map[string]int{
		"/api/v1/sources/shop/upstream": 404, "/api/v1/sources/nope/upstream": 404,
	} {
		if code, body := f.get(path); code != want {
			t.Errorf("GET %s = %d %s; want %d", path, code, body, want)
		}
	}
	if code, body := f.post("/api/v1/sources/shop/upstream/check"); code != 400 || !strings.Contains(string(body), "no [source.upstream] table") {
		t.Errorf("check of shop = %d %s; want 400", code, body)
	}
	es, err := f.db.Audit(context.Background(), app.AuditQuery{Action: app.AuditUpstream})
	if err != nil {
		t.Fatal(err)
	}
	actors := map[string]int{}
	for _, e := range es {
		actors[e.Actor]++
		if strings.Contains(e.Detail, "fixture0key") {
			t.Errorf("the key in the audit log: %+v", e)
		}
	}
	if actors["ops"] != 2 || actors[app.UpstreamActor] != 1 {
		t.Errorf("audit actors = %v; want ops twice (asked; asked of shop), upstream once (what it did)", actors)
	}
}

// A fetched event says so in the API (origin, the provider's time) and on
// its page; a webhook's says "webhook".
func TestAPI_FetchedEvent(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	f := openFixture(t, t.TempDir(), now, nil)
	at := now.Add(-3 * time.Hour)
	fetched := &app.Event{Source: "stripe-payments-europe", ID: "evt_1", Topic: "charge.succeeded", ReceivedAt: now,
		Body: []byte(`{"id":"evt_1"}`), Origin: app.OriginFetched, ProviderAt: at}
	plain := &app.Event{Source: "stripe-payments-europe", ID: "evt_2", Topic: "charge.succeeded", ReceivedAt: now, Body: []byte(`{"id":"evt_2"}`)}
	for _, e := range []*app.Event{fetched, plain} {
		if dup, err := f.db.Accept(context.Background(), e, now.Add(time.Hour), nil); err != nil || dup {
			t.Fatal(dup, err)
		}
	}
	for _, tt := range []struct {
		e    *app.Event
		want string
	}{
		{fetched, `"origin":"fetched","provider_at":"` + at.Format(time.RFC3339) + `"`},
		{plain, `"origin":"webhook"}`},
	} {
		if code, body := f.get("/api/v1/events/" + itoa(tt.e.Seq)); code != 200 || !strings.Contains(string(body), tt.want) {
			t.Errorf("event %s: %d %s; want %s", tt.e.ID, code, body, tt.want)
		}
	}
	if code, page := f.get("/events/" + itoa(fetched.Seq)); code != 200 || !strings.Contains(string(page), "<strong>fetched</strong> from the provider's API") ||
		!strings.Contains(string(page), "(the provider's time)") {
		t.Errorf("page of a fetched event: %d, no word of how it came:\n%.3000s", code, page)
	}
	if _, page := f.get("/events/" + itoa(plain.Seq)); strings.Contains(string(page), "fetched") {
		t.Errorf("page of a webhook says fetched")
	}
}

// The configuration page shows, per source with [source.upstream], what
// its last check found (not its reason: that is the operators'), and a
// dash for the others.
func TestPage_ConfigUpstream(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	if _, page := f.get("/config"); !strings.Contains(string(page), `data-label="provider's side" class="upstream">not checked yet</td>`) {
		t.Errorf("config page before a check: no \"not checked yet\"")
	}
	f.post("/api/v1/sources/stripe-payments-europe/upstream/check")
	_, page := f.get("/config")
	if !strings.Contains(string(page), `class="upstream warn">failed: see hookbox upstream check stripe-payments-europe (<time`) ||
		strings.Contains(string(page), "webhook_endpoints") {
		t.Errorf("config page after a failed check: no failure line, or its reason shown")
	}
	if !strings.Contains(string(page), `data-label="provider's side" class="upstream">—</td>`) {
		t.Errorf("config page: no dash for the source without upstream")
	}
}
