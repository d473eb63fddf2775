package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/web"
)

// GET /api/v1/sources/{name}/quarantine lists what the source refused for
// its signature, the signature masked and the body cut short; recheck
// leaves what the secret still refuses; DELETE clears it.
func TestAPI_Quarantine(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	body := `{"forged": "` + strings.Repeat("x", 5000) + `"}`
	req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(body))
	req.Header.Set("X-Shopify-Hmac-Sha256", "c2VjcmV0LWxvb2tpbmctc2lnbmF0dXJlLTMyYnl0ZXM=")
	req.Header.Set("X-Shopify-Topic", "orders/create")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("forged request: %v, %v; want 401", resp, err)
	}
	resp.Body.Close()
	type list struct {
		Requests int `json:"requests"`
		Entries  []struct {
			Reason  string `json:"reason"`
			Headers []struct {
				Name, Value string
				Masked      bool
			} `json:"headers"`
			Body          string `json:"body"`
			BodyBytes     int    `json:"body_bytes"`
			BodyTruncated bool   `json:"body_truncated"`
		} `json:"entries"`
	}
	var l list
	apptest.Eventually(t, 10*time.Second, "the forged request listed", func() bool {
		status, b := f.get("/api/v1/sources/shop/quarantine")
		if status != 200 {
			t.Fatalf("list: %d %s", status, b)
		}
		l = list{}
		return json.Unmarshal(b, &l) == nil && l.Requests == 1 && len(l.Entries) == 1
	})
	e := l.Entries[0]
	if e.Reason != "signature does not match" || e.BodyBytes != len(body) || !e.BodyTruncated || len(e.Body) != 4096 {
		t.Errorf("entry: reason %q, %d bytes, truncated %v, shown %d; want the reason, %d bytes cut at 4096", e.Reason, e.BodyBytes, e.BodyTruncated, len(e.Body), len(body))
	}
	masked := false
	for _, h := range e.Headers {
		if strings.EqualFold(h.Name, "X-Shopify-Hmac-Sha256") {
			masked = h.Masked && !strings.Contains(h.Value, "c2VjcmV0")
		}
	}
	if !masked {
		t.Errorf("the signature header is not masked: %+v", e.Headers)
	}
	status, b := f.postJSON("/api/v1/sources/shop/quarantine/recheck", "")
	if status != 200 || !strings.Contains(string(b), `"remaining":1`) {
		t.Errorf("recheck: %d %s; want the forged one remaining", status, b)
	}
	dreq, _ := http.NewRequest("DELETE", f.base+"/api/v1/sources/shop/quarantine", nil)
	dreq.SetBasicAuth("ops", "pw-1234")
	dresp, err := http.DefaultClient.Do(dreq)
	if err != nil || dresp.StatusCode != 200 {
		t.Fatalf("clear: %v, %v", dresp, err)
	}
	dresp.Body.Close()
	if n, _, _ := f.db.QuarantineUsage(context.Background(), "shop"); n != 0 {
		t.Errorf("after clear: %d; want 0", n)
	}
	if status, _ := f.get("/api/v1/sources/nope/quarantine"); status != 404 {
		t.Errorf("unknown source: %d; want 404", status)
	}
}

// The Quarantine page (operators) shows each source's kept requests, the
// signature masked; a viewer gets neither the page nor its link.
func TestPage_Quarantine(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	sig := "c2VjcmV0LWxvb2tpbmctc2lnbmF0dXJlLTMyYnl0ZXM="
	req, _ := http.NewRequest("POST", f.base+"/in/shop", strings.NewReader(`{"forged": "<b>page</b>"}`))
	req.Header.Set("X-Shopify-Hmac-Sha256", sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 401 {
		t.Fatalf("forged request: %v, %v; want 401", resp, err)
	}
	resp.Body.Close()
	var page string
	apptest.Eventually(t, 10*time.Second, "the page lists the forged request", func() bool {
		status, b := f.get("/quarantine")
		if status != 200 {
			t.Fatalf("page: %d %s", status, b)
		}
		page = string(b)
		return strings.Contains(page, "1 request kept")
	})
	for _, want := range []string{`data-source="shop"`, "signature does not match", "X-Shopify-Hmac-Sha256", "masked", `&lt;b&gt;page&lt;/b&gt;`, `href="/quarantine"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(page, sig) {
		t.Error("the page shows the signature")
	}
}

// The Quarantine page's buttons (issue 45): an operator sees Recheck now
// and Clear beside a source that keeps requests; Recheck now, once the
// secret is fixed, takes in what the old one refused and says how many
// came in and how many are still refused; Clear asks first, then empties
// it; each is audited as the API's, the operator its actor. A viewer
// sees no button and is refused both.
func TestPage_QuarantineButtons(t *testing.T) {
	ctx := context.Background()
	fixed := "s3cret-fixed"
	// The server runs with the fixed secret; the fixture's own receiver,
	// with the old one, is the one that refused and kept the requests.
	f := openFixtureDeps(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil, "", func(d *web.Deps) {
		cfg := mustConfig(t, strings.Replace(fixtureConfig, `secret = "s3cret-shop"`, `secret = "`+fixed+`"`, 1))
		r := receive.New(cfg, d.Store.(app.IngestStore))
		r.Stats, r.Now = d.Stats, d.Now
		r.KeepQuarantine(d.Quarantine)
		d.Receiver = r
	})
	refuse := func(h http.Header, body string) {
		t.Helper()
		in := &app.Inbound{Body: []byte(body), Client: "203.0.113.9"}
		for k, vs := range h {
			for _, v := range vs {
				in.Header = append(in.Header, app.HeaderField{Name: k, Value: v})
			}
		}
		if _, err := f.recv.Receive(ctx, "shop", in); err == nil {
			t.Fatalf("the old secret took %s", body)
		}
	}
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte(fixed)}}, []byte(`{"id": 7}`), "", "order-7", "orders/create", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	refuse(h, `{"id": 7}`)
	refuse(http.Header{"X-Shopify-Hmac-Sha256": {"c2VjcmV0LWxvb2tpbmctc2lnbmF0dXJlLTMyYnl0ZXM="}, "X-Shopify-Topic": {"orders/create"}}, `{"forged": true}`)
	apptest.Eventually(t, 10*time.Second, "both requests kept", func() bool {
		n, _, _ := f.db.QuarantineUsage(ctx, "shop")
		return n == 2
	})
	for _, u := range []string{`{"name": "olga", "role": "operator", "password": "olga-long-password"}`, `{"name": "vic", "role": "viewer", "password": "vic-long-password"}`} {
		if code, b := f.postJSON("/api/v1/users", u); code != 201 {
			t.Fatalf("add user: %d %s", code, b)
		}
	}
	login := func(user, pw string) *client {
		c := &client{t: t, base: f.base, jar: map[string]string{}}
		if resp, _ := c.do("POST", "/login", url.Values{"user": {user}, "password": {pw}, "next": {"/"}}); resp.StatusCode != 303 {
			t.Fatalf("login %s: %d", user, resp.StatusCode)
		}
		return c
	}
	section := func(page string) string {
		t.Helper()
		_, rest, ok := strings.Cut(page, `data-source="shop"`)
		if !ok {
			t.Fatalf("no section for shop:\n%s", page)
		}
		body, _, _ := strings.Cut(rest, "</section>")
		return body
	}
	const recheck, clear = `action="/sources/shop/quarantine/recheck"`, `action="/sources/shop/quarantine/clear"`

	// A viewer: no page, no button, and both routes refused.
	vic := login("vic", "vic-long-password")
	_, vpage := vic.do("GET", "/", nil)
	vcsrf := csrfOf(t, vpage)
	for _, path := range []string{"/sources/shop/quarantine/recheck", "/sources/shop/quarantine/clear"} {
		if resp, _ := vic.do("POST", path, url.Values{"csrf": {vcsrf}, "confirm": {"yes"}}); resp.StatusCode != 403 {
			t.Errorf("a viewer's POST %s: %d; want 403", path, resp.StatusCode)
		}
	}
	if n, _, _ := f.db.QuarantineUsage(ctx, "shop"); n != 2 {
		t.Fatalf("after the viewer's tries: %d kept; want 2", n)
	}

	olga := login("olga", "olga-long-password")
	_, page := olga.do("GET", "/quarantine", nil)
	s := section(page)
	if !strings.Contains(s, recheck) || !strings.Contains(s, clear) || !strings.Contains(s, ">Recheck now</button>") || !strings.Contains(s, ">Clear</button>") {
		t.Fatalf("the operator's page has no Recheck now and Clear for shop:\n%s", s)
	}
	if _, stripe, _ := strings.Cut(page, `data-source="stripe-payments-europe"`); strings.Contains(stripe, "<form") {
		t.Error("buttons beside a source that keeps nothing")
	}
	csrf := csrfOf(t, page)
	if resp, _ := olga.do("POST", "/sources/shop/quarantine/recheck", url.Values{}); resp.StatusCode != 403 {
		t.Errorf("Recheck now without the CSRF token: %d; want 403", resp.StatusCode)
	}

	// Recheck now: the fixed secret takes order-7 in; the forged stays.
	resp, _ := olga.do("POST", "/sources/shop/quarantine/recheck", url.Values{"csrf": {csrf}})
	if resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), "/quarantine?") {
		t.Fatalf("Recheck now: %d to %q; want 303 to the page", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, seq, _, _ := f.db.LookupID(ctx, "shop", "order-7"); seq == 0 {
		t.Error("Recheck now did not take order-7 in")
	}
	_, page = olga.do("GET", resp.Header.Get("Location"), nil)
	if !strings.Contains(page, "shop rechecked: 1 taken in, 1 still refused.") || !strings.Contains(section(page), "1 request kept") {
		t.Errorf("the page after Recheck now does not say what it did:\n%s", page)
	}

	// Clear asks first, and deletes nothing until confirmed.
	_, confirm := olga.do("POST", "/sources/shop/quarantine/clear", url.Values{"csrf": {csrf}})
	if !strings.Contains(confirm, "Delete the 1 request shop keeps?") || !strings.Contains(confirm, `action="/sources/shop/quarantine/clear"`) ||
		!strings.Contains(confirm, `name="confirm" value="yes"`) || !strings.Contains(confirm, `<a href="/quarantine">Cancel</a>`) {
		t.Fatalf("Clear does not ask first:\n%s", confirm)
	}
	if n, _, _ := f.db.QuarantineUsage(ctx, "shop"); n != 1 {
		t.Fatalf("after Clear's question: %d kept; want 1", n)
	}
	resp, _ = olga.do("POST", "/sources/shop/quarantine/clear", url.Values{"csrf": {csrfOf(t, confirm)}, "confirm": {"yes"}})
	if resp.StatusCode != 303 {
		t.Fatalf("Clear confirmed: %d", resp.StatusCode)
	}
	if n, _, _ := f.db.QuarantineUsage(ctx, "shop"); n != 0 {
		t.Errorf("after Clear: %d kept; want 0", n)
	}
	_, page = olga.do("GET", resp.Header.Get("Location"), nil)
	if !strings.Contains(page, "shop: 1 request deleted.") || strings.Contains(section(page), recheck) {
		t.Errorf("the page after Clear does not say it, or still offers the buttons:\n%s", page)
	}

	// Audited as the API's: the operator, the source, what came of it;
	// Clear's question is not recorded; the viewer's tries are, refused.
	entries, err := f.db.Audit(ctx, app.AuditQuery{Action: "quarantine."})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, strings.Join([]string{e.Actor, e.Action, e.Target, e.Result, e.Detail}, "|"))
	}
	want := []string{
		"olga|quarantine.clear|source shop|ok|cleared 1",
		"olga|quarantine.recheck|source shop|ok|checked 2, recovered 1 (0 held already), remaining 1",
	}
	if len(got) != 4 || strings.Join(got[:2], "\n") != strings.Join(want, "\n") || !strings.HasPrefix(got[2], "vic|quarantine.clear|shop|denied|") || !strings.HasPrefix(got[3], "vic|quarantine.recheck|shop|denied|") {
		t.Errorf("audit:\n%s\nwant first:\n%s\nthen the viewer's two refusals", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
