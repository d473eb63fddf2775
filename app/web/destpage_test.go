package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// The Destinations page (issue 44): a card per destination with its state
// word, its backlog and its last error, cut and escaped, and its URL as
// the Configuration page shows it (no query); an operator's Pause, Resume
// and Retry now post to the overview's routes with the CSRF token and come
// back to the page; a viewer gets no button.
func TestUI_DestinationsPage(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	f := openFixture(t, t.TempDir(), now, nil)
	events := f.fill()
	// crm's last error: long, with markup.
	long := "<script>alert(1)</script> " + strings.Repeat("the upstream said no; ", 40)
	d := f.deliveryTo(events[2], "crm")
	if err := f.db.RecordAttempt(context.Background(), d.ID, &app.Attempt{Start: now, Error: long}, app.Pending, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if code, b := f.postJSON("/api/v1/users", `{"name": "vic", "role": "viewer", "password": "vic-long-password"}`); code != 201 {
		t.Fatalf("add viewer: %d %s", code, b)
	}
	login := func(user, pw string) *client {
		c := &client{t: t, base: f.base, jar: map[string]string{}}
		if resp, _ := c.do("POST", "/login", url.Values{"user": {user}, "password": {pw}, "next": {"/"}}); resp.StatusCode != 303 {
			t.Fatalf("login %s: %d", user, resp.StatusCode)
		}
		return c
	}
	ops := login("ops", "pw-1234")
	resp, page := ops.do("GET", "/destinations", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("/destinations: %d\n%s", resp.StatusCode, page)
	}
	card := func(page, name string) string {
		t.Helper()
		_, rest, ok := strings.Cut(page, `data-destination="`+name+`"`)
		if !ok {
			t.Fatalf("no card for %s:\n%s", name, page)
		}
		body, _, _ := strings.Cut(rest, "</article>")
		return body
	}
	for name, want := range map[string]string{"pos": app.DestDelivering, "crm": app.DestFailing, "erp-warehouse-integration": app.DestFailing} {
		if c := card(page, name); !strings.Contains(c, `data-stat="state">`+want+`<`) {
			t.Errorf("%s's card does not read %q:\n%s", name, want, c)
		}
	}
	crm := card(page, "crm")
	if strings.Contains(crm, "<script>") || !strings.Contains(crm, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Errorf("crm's last error is not shown escaped:\n%s", crm)
	}
	if strings.Contains(crm, long[:400]) {
		t.Errorf("crm's last error of %d characters is not cut:\n%s", len(long), crm)
	}
	if erp := card(page, "erp-warehouse-integration"); strings.Contains(erp, "not-shown") || !strings.Contains(erp, "https://erp.example.com/hooks/incoming/webhooks/from-hookbox?…") {
		t.Errorf("erp's URL is not shown without its query:\n%s", erp)
	}
	if !strings.Contains(page, `<a href="/destinations" aria-current="page">Destinations</a>`) {
		t.Error("the navigation does not lead to the Destinations page")
	}

	// Pause, resume and retry come back to the page.
	csrf := csrfOf(t, page)
	post := func(path string, form url.Values, want string) {
		t.Helper()
		resp, body := ops.do("POST", path, form)
		if resp.StatusCode != 303 || resp.Header.Get("Location") != want {
			t.Fatalf("POST %s: %d to %q; want 303 to %q\n%s", path, resp.StatusCode, resp.Header.Get("Location"), want, body)
		}
	}
	post("/destinations/pos/pause", url.Values{"csrf": {csrf}, "back": {"/destinations"}, "reason": {"till swap"}}, "/destinations")
	_, page = ops.do("GET", "/destinations", nil)
	if c := card(page, "pos"); !strings.Contains(c, `data-stat="state">paused<`) || !strings.Contains(c, "by ops: till swap") || !strings.Contains(c, `action="/destinations/pos/resume"`) {
		t.Errorf("pos after Pause:\n%s", c)
	}
	if _, api := f.get("/api/v1/destinations"); !strings.Contains(string(api), `{"name":"pos","state":"paused",`) {
		t.Errorf("the API does not say pos is paused: %s", api)
	}
	post("/destinations/pos/resume", url.Values{"csrf": {csrf}, "back": {"/destinations"}}, "/destinations")
	post("/destinations/crm/retry", url.Values{"csrf": {csrf}, "back": {"/destinations"}}, "/destinations?destination=crm&retried=1")
	if _, page = ops.do("GET", "/destinations?destination=crm&retried=1", nil); !strings.Contains(page, "1 delivery to crm due now") {
		t.Errorf("the page after Retry now does not say how many:\n%s", page)
	}
	// Elsewhere (the overview's rows, or a back that is not the page) the
	// buttons go back to the overview, as before.
	post("/destinations/pos/pause", url.Values{"csrf": {csrf}}, "/")
	post("/destinations/pos/resume", url.Values{"csrf": {csrf}, "back": {"https://evil.example/"}}, "/")
	if resp, _ := ops.do("POST", "/destinations/pos/pause", url.Values{"back": {"/destinations"}}); resp.StatusCode != 403 {
		t.Errorf("a pause without the CSRF token: %d, want 403", resp.StatusCode)
	}

	// A viewer reads the same page without a button.
	vic := login("vic", "vic-long-password")
	_, page = vic.do("GET", "/destinations", nil)
	for _, name := range []string{"pos", "crm", "erp-warehouse-integration"} {
		if c := card(page, name); strings.Contains(c, "<form") || strings.Contains(c, "<button") {
			t.Errorf("a viewer gets a button on %s:\n%s", name, c)
		}
	}
}
