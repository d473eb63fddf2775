package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/web"
)

// snake is what every key of an API answer looks like.
var snake = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// looksLikeTime matches a string that starts as an RFC 3339 time would.
var looksLikeTime = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T`)

// checkJSON walks an API answer and reports every key that is not
// snake_case, every zero time ("never" must be null or absent) and every
// time that is not RFC 3339. Keys under "headers" are header names, and
// the values of "header_list" a sender's, data rather than fields.
func checkJSON(path string, v any, problems *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if !snake.MatchString(k) {
				*problems = append(*problems, fmt.Sprintf("%s: key %q is not snake_case", path, k))
			}
			if k == "headers" {
				continue
			}
			if k == "header_list" {
				for i, h := range asList(child) {
					for hk := range asMap(h) {
						if hk != "name" && hk != "value" {
							*problems = append(*problems, fmt.Sprintf("%s.%s[%d]: key %q; want name and value", path, k, i, hk))
						}
					}
				}
				continue
			}
			checkJSON(path+"."+k, child, problems)
		}
	case []any:
		for i, child := range x {
			checkJSON(fmt.Sprintf("%s[%d]", path, i), child, problems)
		}
	case string:
		if !looksLikeTime.MatchString(x) {
			return
		}
		t, err := time.Parse(time.RFC3339Nano, x)
		switch {
		case err != nil:
			*problems = append(*problems, fmt.Sprintf("%s: %q is not an RFC 3339 time", path, x))
		case t.IsZero() || t.Year() < 1970:
			*problems = append(*problems, fmt.Sprintf("%s: %q is the zero time: never is null or absent", path, x))
		}
	}
}

// Every answer of the admin API, with data present, has snake_case keys,
// RFC 3339 times and no zero time. The test covers each API route the
// server has: a new route without a case here fails it.
func TestAPI_JSONStyle(t *testing.T) {
	f := openFixtureDeps(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil, "", func(d *web.Deps) {
		reloads := 0 // the first reload is put in force, the second refused
		d.Reload = func() app.Reloaded {
			reloads++
			return fakeReload(reloads%2 == 0)
		}
	})
	events := f.fill()
	_, dead := f.get("/api/v1/dead-letters")
	var dl struct {
		Items []struct {
			ID uint64 `json:"id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(dead, &dl); err != nil || len(dl.Items) < 2 {
		t.Fatalf("dead letters: %s, %v", dead, err)
	}
	d0, d1 := dl.Items[0].ID, dl.Items[1].ID
	delivered := f.deliveryTo(events[2], "pos").ID
	if err := f.db.HoldDestination(context.Background(), "crm", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	calls := []struct{ method, path, route string }{
		{"GET", "/api/v1/stats", "/api/v1/stats"},
		{"GET", "/api/v1/config", "/api/v1/config"},
		{"POST", "/api/v1/reload", "/api/v1/reload"}, // put in force
		{"POST", "/api/v1/reload", "/api/v1/reload"}, // refused
		{"GET", "/api/v1/events", "/api/v1/events"},
		{"GET", "/api/v1/events?limit=1", "/api/v1/events"},
		{"GET", "/api/v1/events?q=a%2Fb&limit=1", "/api/v1/events"},       // a body search
		{"GET", "/api/v1/events?q=ab", "/api/v1/events"},                  // too short: the error answer
		{"GET", "/api/v1/events?q=order-search-window", "/api/v1/events"}, // cut by its budget (below)
		{"GET", "/api/v1/dead-letters", "/api/v1/dead-letters"},
		{"GET", "/api/v1/backup", "/api/v1/backup"}, // no backup in this server: the error answer
		{"GET", "/api/v1/events/999999", "/api/v1/events/:seq"},
		{"GET", "/api/v1/events/999999/body", "/api/v1/events/:seq/body"}, // the body itself is not JSON: the error answer
		{"POST", fmt.Sprintf("/api/v1/dead-letters/%d/replay", d0), "/api/v1/dead-letters/:id/replay"},
		{"POST", fmt.Sprintf("/api/v1/deliveries/%d/replay", d1), "/api/v1/deliveries/:id/replay"},
		{"POST", "/api/v1/dead-letters/replay", "/api/v1/dead-letters/replay"},
		{"POST", "/api/v1/destinations/pos/pause", "/api/v1/destinations/:name/pause"},
		{"GET", "/api/v1/destinations", "/api/v1/destinations"}, // pos paused, crm held (below)
		{"POST", "/api/v1/destinations/pos/resume", "/api/v1/destinations/:name/resume"},
		{"POST", "/api/v1/destinations/nope/pause", "/api/v1/destinations/:name/pause"}, // the error answer
		{"GET", "/healthz", "/healthz"},
		// The upstream checks (issue 45): none ran, one (its API is down),
		// the last one, all of them; a source without the table.
		{"GET", "/api/v1/sources/stripe-payments-europe/upstream", "/api/v1/sources/:name/upstream"},
		{"POST", "/api/v1/sources/stripe-payments-europe/upstream/check", "/api/v1/sources/:name/upstream/check"},
		{"GET", "/api/v1/sources/stripe-payments-europe/upstream", "/api/v1/sources/:name/upstream"},
		{"POST", "/api/v1/upstream/check", "/api/v1/upstream/check"},
		{"GET", "/api/v1/sources/shop/upstream", "/api/v1/sources/:name/upstream"},
		{"POST", "/api/v1/sources/shop/upstream/check", "/api/v1/sources/:name/upstream/check"},
		// The stream's error answer (its messages' JSON is walked by
		// stream_test.go).
		{"GET", "/api/v1/stream?topic=" + strings.Repeat("a", 300), "/api/v1/stream"},
		// Replay by query and the force of a delivered one (replay.go):
		// bodies below.
		{"POST", "/api/v1/replay", "/api/v1/replay"},
		{"POST", "/api/v1/replay?bad", "/api/v1/replay"},
		{"POST", "/api/v1/replay?conflict", "/api/v1/replay"},
		{"POST", fmt.Sprintf("/api/v1/deliveries/%d/replay?conflict", delivered), "/api/v1/deliveries/:id/replay"},
		{"POST", fmt.Sprintf("/api/v1/deliveries/%d/replay?force", delivered), "/api/v1/deliveries/:id/replay"},
		{"POST", "/api/v1/deliveries/replay", "/api/v1/deliveries/replay"},
		{"POST", "/api/v1/deliveries/replay?event", "/api/v1/deliveries/replay"},
		// The quarantine (quarantine.go): fill's forged request is in it.
		{"GET", "/api/v1/sources/shop/quarantine", "/api/v1/sources/:name/quarantine"},
		{"POST", "/api/v1/sources/shop/quarantine/recheck", "/api/v1/sources/:name/quarantine/recheck"},
		{"GET", "/api/v1/sources/nope/quarantine", "/api/v1/sources/:name/quarantine"},
	}
	bodies := map[string]string{
		"/api/v1/replay":                  `{"since": "1h", "dry_run": true}`,
		"/api/v1/replay?bad":              `{}`,
		"/api/v1/deliveries/replay":       fmt.Sprintf(`{"ids": [%d, 987654], "dry_run": true}`, delivered),
		"/api/v1/deliveries/replay?event": `{"source": "shop", "event_id": "order-1", "dry_run": true}`,
		"/api/v1/replay?conflict":         `{"source": "shop"}`,
		fmt.Sprintf("/api/v1/deliveries/%d/replay?force", delivered): `{"force": true}`,
	}
	for _, seq := range events {
		calls = append(calls, struct{ method, path, route string }{"GET", fmt.Sprintf("/api/v1/events/%d", seq), "/api/v1/events/:seq"})
		ds, _ := f.db.EventDeliveries(context.Background(), seq)
		for _, d := range ds {
			calls = append(calls, struct{ method, path, route string }{"GET", fmt.Sprintf("/api/v1/deliveries/%d", d.ID), "/api/v1/deliveries/:id"})
		}
	}
	// Retry now (issue 28): a waiting delivery of erp's, then all of erp's.
	if ds, _ := f.db.EventDeliveries(context.Background(), events[1]); len(ds) > 0 {
		for _, d := range ds {
			if d.Destination == "erp-warehouse-integration" {
				calls = append(calls, struct{ method, path, route string }{"POST", fmt.Sprintf("/api/v1/deliveries/%d/retry", d.ID), "/api/v1/deliveries/:id/retry"})
			}
		}
	}
	calls = append(calls, struct{ method, path, route string }{"POST", "/api/v1/destinations/erp-warehouse-integration/retry", "/api/v1/destinations/:name/retry"})
	// Team access (team.go): a user, a token, their lists, the audit log
	// of everything above.
	for _, c := range [][3]string{
		{"POST", "/api/v1/users", "/api/v1/users"},
		{"POST", "/api/v1/users/ann/role", "/api/v1/users/:name/role"},
		{"POST", "/api/v1/users/ann/password", "/api/v1/users/:name/password"},
		{"POST", "/api/v1/tokens", "/api/v1/tokens"},
		{"GET", "/api/v1/users", "/api/v1/users"},
		{"GET", "/api/v1/tokens", "/api/v1/tokens"},
		{"GET", "/api/v1/audit", "/api/v1/audit"},
		{"GET", "/api/v1/audit?limit=2&action=replay.", "/api/v1/audit"},
	} {
		calls = append(calls, struct{ method, path, route string }{c[0], c[1], c[2]})
	}
	bodies["/api/v1/users"] = `{"name": "ann", "role": "viewer"}`
	bodies["/api/v1/users/ann/role"] = `{"role": "operator"}`
	bodies["/api/v1/users/ann/password"] = `{"password": "a-long-enough-password"}`
	bodies["/api/v1/tokens"] = `{"name": "ci", "role": "operator", "expires": "90d"}`
	covered := map[string]bool{}
	for _, c := range calls {
		covered[c.method+" "+c.route] = true
		if strings.Contains(c.path, "search-window") {
			f.db.SetSearchBudget(app.SearchBudget{Events: 1})
		} else {
			f.db.SetSearchBudget(app.SearchBudget{})
		}
		status, body := f.get(c.path)
		if c.method == "POST" {
			status, body = f.postJSON(c.path, bodies[c.path])
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Errorf("%s %s: %d, not JSON: %.200s", c.method, c.path, status, body)
			continue
		}
		var problems []string
		checkJSON(c.path, v, &problems)
		for _, p := range problems {
			t.Error(p)
		}
	}
	for _, r := range f.srv.App().GetRoutes(true) {
		if strings.HasPrefix(r.Path, "/api/v1/") && (r.Method == "GET" || r.Method == "POST") && !covered[r.Method+" "+r.Path] {
			t.Errorf("%s %s: no case in this test", r.Method, r.Path)
		}
	}
	// What was wrong before: the stats' rows had Go's field names and
	// "0001-01-01T00:00:00Z" for never.
	_, stats := f.get("/api/v1/stats")
	for _, bad := range []string{`"Name"`, `"LastAt"`, `0001-01-01`} {
		if strings.Contains(string(stats), bad) {
			t.Errorf("stats has %s: %s", bad, stats)
		}
	}
}

func asList(v any) []any         { l, _ := v.([]any); return l }
func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// The walker finds what /api/v1/stats used to answer.
func TestCheckJSON_FindsOldStyle(t *testing.T) {
	var v any
	json.Unmarshal([]byte(`{"destinations":[{"Name":"pos","LastAt":"0001-01-01T00:00:00Z","since":"yesterday 10:00","at":"2026-13-01T00:00:00Z"}],"headers":{"X-Shopify-Topic":"a"}}`), &v)
	var problems []string
	checkJSON("", v, &problems)
	if len(problems) != 4 {
		t.Fatalf("problems = %q; want 4 (two keys, a zero time, a bad time)", problems)
	}
}
