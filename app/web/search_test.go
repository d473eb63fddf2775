package web_test

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// eventsAnswer is GET /api/v1/events.
type eventsAnswer struct {
	Items []struct {
		Seq    uint64 `json:"seq"`
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"items"`
	NextBefore    uint64  `json:"next_before"`
	SearchedUntil *string `json:"searched_until"`
	Searched      int     `json:"searched"`
}

// searchFixture is the web fixture's events (orders 0 to 2 with the body
// note "a/b & <c>", customers) and an order #1004 from Ann.
func searchFixture(t *testing.T) *fixture {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	f.fill()
	if r := f.send("order-1004", "orders/create", `{"name":"#1004","email":"Ann@Example.com"}`); r.StatusCode != 200 {
		t.Fatalf("send order-1004: %d", r.StatusCode)
	}
	return f
}

// GET /api/v1/events?q=: events whose body contains the text, ASCII
// letters in either case, with the other filters; fewer than 3 characters
// is 400 with the reason; a search that stops at its budget says how far
// back it looked (searched_until, searched) and next_before goes on.
func TestAPI_EventsSearch(t *testing.T) {
	f := searchFixture(t)
	events := func(query string) (a eventsAnswer) {
		t.Helper()
		status, body := f.get("/api/v1/events?" + query)
		if status != 200 {
			t.Fatalf("%s: %d %s", query, status, body)
		}
		if err := json.Unmarshal(body, &a); err != nil {
			t.Fatalf("%s: %v: %s", query, err, body)
		}
		return a
	}
	ids := func(a eventsAnswer) string {
		var out []string
		for _, it := range a.Items {
			out = append(out, it.ID+":"+it.Status)
		}
		return strings.Join(out, " ")
	}
	for _, tc := range []struct{ query, want string }{
		{"q=" + url.QueryEscape("#1004"), "order-1004:pending"},
		{"q=ANN%40example", "order-1004:pending"},
		{"q=" + url.QueryEscape("A/B & <C>"), "order-2:failing order-1:dead order-0:dead"},
		{"q=" + url.QueryEscape("a/b") + "&status=dead", "order-1:dead order-0:dead"},
		{"q=" + url.QueryEscape("a/b") + "&topic=customers%2F%2A", ""},
		{"q=" + url.QueryEscape("a/b") + "&id=order-1", "order-1:dead"},
		{"q=" + url.QueryEscape("a/b") + "&limit=2", "order-2:failing order-1:dead"},
		{"q=%232000", ""},
	} {
		a := events(tc.query)
		if got := ids(a); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.query, got, tc.want)
		}
		if a.SearchedUntil != nil {
			t.Errorf("%s: searched_until %s on a search that read everything", tc.query, *a.SearchedUntil)
		}
	}
	for _, q := range []string{"ab", "%C3%A9%C3%A9"} {
		status, body := f.get("/api/v1/events?q=" + q)
		if status != 400 || !strings.Contains(string(body), "a body search needs at least 3 characters") {
			t.Errorf("q=%s: %d %s; want 400 with the reason", q, status, body)
		}
	}

	// A budget of 2 events: three pages back to the orders, each saying
	// how far it looked.
	f.db.SetSearchBudget(app.SearchBudget{Events: 2})
	var got []string
	query := "q=" + url.QueryEscape("a/b")
	for page := 0; ; page++ {
		a := events(query)
		if got = append(got, ids(a)); a.NextBefore == 0 {
			break
		}
		if a.SearchedUntil == nil || a.Searched != 2 {
			t.Fatalf("page %d: searched_until %v, searched %d; want a time and 2", page, a.SearchedUntil, a.Searched)
		}
		if _, err := time.Parse(time.RFC3339, *a.SearchedUntil); err != nil {
			t.Fatalf("searched_until %q: %v", *a.SearchedUntil, err)
		}
		if page > 10 {
			t.Fatal("the search does not end")
		}
		query = "q=" + url.QueryEscape("a/b") + "&before=" + fmt.Sprint(a.NextBefore)
	}
	if all := strings.Fields(strings.Join(got, " ")); strings.Join(all, " ") != "order-2:failing order-1:dead order-0:dead" {
		t.Fatalf("pages %q; want the three orders, newest first", got)
	}
}

// POST /api/v1/replay with q: the deliveries of the events whose body has
// the text; a short q is 400 with the reason, and q alone is a filter.
func TestReplayQuery_APISearch(t *testing.T) {
	f := searchFixture(t)
	type result struct {
		Matched   int `json:"matched"`
		Delivered int `json:"delivered"`
		Replayed  int `json:"replayed"`
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
	if _, answer := call(`{"q": "ab"}`, 400); !strings.Contains(answer, "a body search needs at least 3 characters") {
		t.Fatalf("short q: %s", answer)
	}
	// Orders 0 to 2: 3 delivered to pos, 2 dead to crm; order #1004 has
	// only pending deliveries.
	if dry, _ := call(`{"q": "A/B & <C>", "dry_run": true}`, 200); dry.Matched != 5 || dry.Delivered != 3 {
		t.Fatalf("dry run = %+v; want 5 matched, 3 delivered", dry)
	}
	if dry, _ := call(`{"q": "#1004", "dry_run": true}`, 200); dry.Matched != 0 {
		t.Fatalf("dry run #1004 = %+v; want none (pending)", dry)
	}
	if r, _ := call(`{"q": "a/b &", "destination": "crm"}`, 200); r.Matched != 2 || r.Replayed != 2 {
		t.Fatalf("replay of crm's = %+v; want 2", r)
	}
	if n, _ := f.db.CountDead(t.Context()); n != 0 {
		t.Fatalf("%d dead after the replay", n)
	}
}

// The events page's search box: the matching events, the refusal of a
// short text, the window a search read when it stopped at its budget with
// a link that searches further, and the replay of what a search selects.
func TestUI_EventsSearch(t *testing.T) {
	f := searchFixture(t)
	c := &client{t: t, base: f.base, jar: map[string]string{}}
	if resp, _ := c.do("POST", "/login", url.Values{"user": {"ops"}, "password": {"pw-1234"}, "next": {"/events"}}); resp.StatusCode != 303 {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	_, page := c.do("GET", "/events?q="+url.QueryEscape("#1004"), nil)
	if !strings.Contains(page, ">order-1004</a>") || strings.Contains(page, ">order-0</a>") || !strings.Contains(page, `name="q" value="#1004"`) {
		t.Fatalf("search #1004:\n%s", page)
	}
	if _, page := c.do("GET", "/events?q=ab", nil); !strings.Contains(page, html.EscapeString(`search: "ab" is too short: give at least 3 characters`)) {
		t.Fatalf("short search:\n%s", page)
	}
	// While a search is on, the replay offer takes it.
	_, page = c.do("GET", "/events?q="+url.QueryEscape("a/b &"), nil)
	if !strings.Contains(page, "Replay these 5 deliveries…") || !strings.Contains(page, `<input type="hidden" name="q" value="a/b &amp;">`) {
		t.Fatalf("no replay offer with the search:\n%s", page)
	}
	tok := csrfOf(t, page)
	_, page = c.do("POST", "/replay", url.Values{"csrf": {tok}, "q": {"a/b &"}})
	if !strings.Contains(page, "9 match: 2 dead will be sent, 3 delivered skipped (“Send all” sends them too), 4 pending left alone (on their way already)") {
		t.Fatalf("confirm page of the search's replay:\n%s", page)
	}
	resp, _ := c.do("POST", "/replay", url.Values{"csrf": {tok}, "q": {"a/b &"}, "confirm": {"yes"}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != 303 || !strings.Contains(loc, "replayed=2") || !strings.Contains(loc, "q=a%2Fb") {
		t.Fatalf("replay of the search's dead ones: %d to %q", resp.StatusCode, loc)
	}

	// A budget of 2 events: the page says what it read and links further.
	f.db.SetSearchBudget(app.SearchBudget{Events: 2})
	_, page = c.do("GET", "/events?q="+url.QueryEscape("a/b"), nil)
	if !strings.Contains(page, "Searched the last ") || !strings.Contains(page, ", 2 events — <a href=\"/events?before=") ||
		!strings.Contains(page, "search further</a>") || !strings.Contains(page, "Replay the deliveries of the events this search matches…") {
		t.Fatalf("no window on a search cut at its budget:\n%s", page)
	}
	var found []string
	for range 10 {
		rest := page
		for {
			i := strings.Index(rest, ">order-")
			if i < 0 {
				break
			}
			rest = rest[i+1:]
			found = append(found, rest[:strings.Index(rest, "<")])
		}
		i := strings.Index(page, `<a href="/events?before=`)
		if i < 0 {
			break
		}
		href := html.UnescapeString(page[i+len(`<a href="`):])
		href = href[:strings.Index(href, `"`)]
		if !strings.Contains(href, "q=a%2Fb") {
			t.Fatalf("search further %q loses the search", href)
		}
		_, page = c.do("GET", href, nil)
		if strings.Contains(page, "search further") && !strings.Contains(page, "Searched back to ") {
			t.Fatalf("a page further on does not say where it stopped:\n%s", page)
		}
	}
	if strings.Join(found, " ") != "order-2 order-1 order-0" {
		t.Fatalf("searching further found %v; want the three orders, newest first", found)
	}
}

// A caller with app.SearchesPerCaller body searches running gets 429 with
// Retry-After for another, from the API, the events page and replay by
// query alike, in the shape of the API's other errors; searches without a
// body search are not counted, and a place given back serves again
// (issue 42).
func TestAPI_SearchBusy(t *testing.T) {
	f := searchFixture(t)
	var leaves []func()
	for range app.SearchesPerCaller {
		leave, err := f.searches.Enter("ops")
		if err != nil {
			t.Fatal(err)
		}
		leaves = append(leaves, leave)
	}
	do := func(method, path, body string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, f.base+path, strings.NewReader(body))
		req.SetBasicAuth("ops", "pw-1234")
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/api/v1/events?q=%231004", ""},
		{"POST", "/api/v1/replay", `{"q": "#1004", "dry_run": true}`},
		{"GET", "/events?q=%231004", ""},
	} {
		resp, b := do(tc.method, tc.path, tc.body)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s with two searches running: %d, Retry-After %q; want 429 with Retry-After", tc.method, tc.path, resp.StatusCode, resp.Header.Get("Retry-After"))
		}
		if strings.HasPrefix(tc.path, "/api/") {
			var a struct{ Status, Error string }
			if err := json.Unmarshal(b, &a); err != nil || a.Status != "error" || !strings.Contains(a.Error, "body searches running") {
				t.Errorf("%s %s: %s; want the API's error shape with the reason", tc.method, tc.path, b)
			}
		} else if !strings.Contains(html.UnescapeString(string(b)), "body searches running") {
			t.Errorf("%s %s: the page does not say why", tc.method, tc.path)
		}
	}
	if resp, b := do("GET", "/api/v1/events?source=shop", ""); resp.StatusCode != 200 {
		t.Errorf("a list without a body search: %d %s; want 200", resp.StatusCode, b)
	}
	leaves[0]()
	if resp, b := do("GET", "/api/v1/events?q=%231004", ""); resp.StatusCode != 200 {
		t.Errorf("a search after one answered: %d %s; want 200", resp.StatusCode, b)
	}
	leaves[1]()
}

// POST /api/v1/replay with a limit: the dry run and the run select the
// same first deliveries in accept order, and both say the limit and that
// more remain.
func TestReplayQuery_APILimit(t *testing.T) {
	f := searchFixture(t)
	type answer struct {
		Matched  int  `json:"matched"`
		Replayed int  `json:"replayed"`
		More     bool `json:"more"`
		Limit    int  `json:"limit"`
		First    []struct {
			Delivery uint64 `json:"delivery"`
		} `json:"first"`
	}
	call := func(body string) (a answer) {
		t.Helper()
		status, b := f.postJSON("/api/v1/replay", body)
		if status != 200 {
			t.Fatalf("%s: %d %s", body, status, b)
		}
		if err := json.Unmarshal(b, &a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	ids := func(a answer) (out []uint64) {
		for _, it := range a.First {
			out = append(out, it.Delivery)
		}
		return out
	}
	dry := call(`{"q": "A/B & <C>", "status": "dead", "limit": 1, "dry_run": true}`)
	run := call(`{"q": "A/B & <C>", "status": "dead", "limit": 1}`)
	if dry.Matched != 1 || !dry.More || dry.Limit != 1 || run.Replayed != 1 || !run.More || run.Limit != 1 ||
		len(ids(dry)) != 1 || !slices.Equal(ids(dry), ids(run)) {
		t.Fatalf("dry run %+v, run %+v; want the same one delivery, limit 1, more remaining", dry, run)
	}
	if all := call(`{"q": "A/B & <C>", "dry_run": true}`); all.Limit != app.MaxReplay || all.More {
		t.Fatalf("without a limit: %+v; want limit %d, none more", all, app.MaxReplay)
	}
	if status, b := f.postJSON("/api/v1/replay", `{"q": "A/B", "limit": 100001}`); status != 400 {
		t.Fatalf("limit past the most: %d %s; want 400", status, b)
	}
}
