package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/metrics"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
)

const uiSecrets = `
[server]
public_url = "https://hooks.example.com"
[status]
user = "ops"
password = "pw-status-77"
[[source]]
name = "shop"
provider = "shopify"
secrets = ["shpss_old_secret_11", "shpss_new_secret_22"]
[[destination]]
name = "pos"
url = "http://127.0.0.1:1/hook?token=dest-query-token-33"
secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
headers = { X-Api-Key = "dest-header-key-44" }
retry = []
[[route]]
source = "shop"
to = ["pos"]
`

var uiSecretValues = []string{"pw-status-77", "shpss_old_secret_11", "shpss_new_secret_22", "dest-query-token-33",
	"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "dest-header-key-44"}

// newUIServer runs the full server with one accepted event whose delivery
// is dead, on a real listener.
func newUIServer(t *testing.T) (addr string, db *bboltstore.DB, eventSeq uint64) {
	t.Helper()
	cfg := mustConfig(t, uiSecrets)
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	login := testAccess(t, cfg, db)
	stats := app.NewStats(cfg, db, time.Now)
	prom := metrics.New(stats, db)
	recv := receive.New(cfg, db)
	recv.Stats = stats
	body := []byte(`{"id": 7, "note": "<script>alert(1)</script>"}`)
	in := &app.Inbound{Body: body}
	for k, v := range signShopWith(t, "shpss_new_secret_22", body, "evt-ui") {
		in.Header = append(in.Header, app.HeaderField{Name: k, Value: v[0]})
	}
	in.Header = append(in.Header, app.HeaderField{Name: "X-Shopify-Shop-Domain", Value: "shop1.myshopify.com"})
	if _, err := recv.Receive(context.Background(), "shop", in); err != nil {
		t.Fatal(err)
	}
	_, seq, _, _ := db.LookupID(context.Background(), "shop", "evt-ui")
	ds, _ := db.EventDeliveries(context.Background(), seq)
	db.RecordAttempt(context.Background(), ds[0].ID, &app.Attempt{Start: time.Now(), Duration: 3 * time.Millisecond, Status: 500, Error: "HTTP 500", Response: []byte("boom")}, app.Dead, time.Time{})
	stats.Attempt("pos", app.Dead, 3*time.Millisecond)
	srv := web.New(cfg, web.Deps{Receiver: recv, Store: db, Health: db.Ping, Access: login, Stats: stats, Metrics: prom,
		Pauser: app.NewPauser(cfg, db, nil, time.Now)})
	return serve(t, srv.App()), db, seq
}

func signShopWith(t *testing.T, secret string, body []byte, id string) http.Header {
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte(secret)}}, body, "", id, "orders/create", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// client is a browser-like client that keeps cookies and does not follow
// redirects.
type client struct {
	t    *testing.T
	base string
	jar  map[string]string
}

func (c *client) do(method, path string, form url.Values) (*http.Response, string) {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, c.base+path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range c.jar {
		req.AddCookie(&http.Cookie{Name: k, Value: v})
	}
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	for _, ck := range resp.Cookies() {
		c.jar[ck.Name] = ck.Value
	}
	raw, _ := io.ReadAll(resp.Body)
	return resp, string(raw)
}

func logIn(t *testing.T, addr string) *client {
	c := &client{t: t, base: "http://" + addr, jar: map[string]string{}}
	resp, _ := c.do("POST", "/login", url.Values{"user": {"ops"}, "password": {"pw-status-77"}, "next": {"/events"}})
	if resp.StatusCode != 303 || resp.Header.Get("Location") != "/events" {
		t.Fatalf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	ck := c.jar["hookbox_session"]
	if ck == "" {
		t.Fatal("no session cookie")
	}
	return c
}

func csrfOf(t *testing.T, page string) string {
	i := strings.Index(page, `name="csrf" value="`)
	if i < 0 {
		t.Fatal("no CSRF token in the page")
	}
	rest := page[i+len(`name="csrf" value="`):]
	return rest[:strings.IndexByte(rest, '"')]
}

// Every route but the public ones refuses a caller without a login.
func TestServer_EveryRouteNeedsLogin(t *testing.T) {
	cfg := mustConfig(t, uiSecrets)
	db, _ := bboltstore.Open(t.TempDir())
	defer db.Close()
	srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping})
	public := map[string]bool{"POST /in/:source": true, "GET /healthz": true, "HEAD /healthz": true,
		"GET /login": true, "HEAD /login": true, "POST /login": true}
	checked := 0
	for _, r := range srv.App().GetRoutes(true) {
		key := r.Method + " " + r.Path
		if public[key] || strings.HasPrefix(r.Path, "/static") || r.Method == "CONNECT" || r.Method == "TRACE" || r.Method == "OPTIONS" {
			continue
		}
		path := strings.NewReplacer(":seq", "1", ":id", "1", ":source", "x").Replace(r.Path)
		resp, err := srv.App().Test(httptest.NewRequest(r.Method, path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 && !(resp.StatusCode == 303 && strings.HasPrefix(resp.Header.Get("Location"), "/login")) {
			t.Errorf("%s answers %d without a login", key, resp.StatusCode)
		}
		checked++
	}
	if checked < 15 {
		t.Fatalf("checked only %d routes", checked)
	}
}

func TestUI_LoginPagesAndCSRF(t *testing.T) {
	addr, db, seq := newUIServer(t)
	anon := &client{t: t, base: "http://" + addr, jar: map[string]string{}}
	if resp, _ := anon.do("GET", "/events", nil); resp.StatusCode != 303 || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("anonymous /events: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, page := anon.do("POST", "/login", url.Values{"user": {"ops"}, "password": {"wrong"}}); resp.StatusCode != 401 || !strings.Contains(page, "Wrong user or password") {
		t.Fatalf("bad login: %d", resp.StatusCode)
	}

	c := logIn(t, addr)
	resp, page := c.do("GET", "/", nil)
	if resp.StatusCode != 200 || !strings.Contains(page, "1 dead delivery") || !strings.Contains(page, "<svg") {
		t.Fatalf("overview: %d\n%s", resp.StatusCode, page)
	}
	for _, h := range []string{"Content-Security-Policy", "X-Frame-Options"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("overview lacks %s", h)
		}
	}
	if !strings.Contains(resp.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("CSP = %q", resp.Header.Get("Content-Security-Policy"))
	}
	_, page = c.do("GET", "/events", nil)
	if !strings.Contains(page, "evt-ui") || !strings.Contains(page, "dead") {
		t.Fatalf("events page lacks the event:\n%s", page)
	}
	_, page = c.do("GET", "/events/"+strconv.FormatUint(seq, 10), nil)
	if !strings.Contains(page, "&lt;script&gt;") || strings.Contains(page, "<script>alert") || !strings.Contains(page, "masked") || !strings.Contains(page, "boom") {
		t.Fatalf("event page:\n%s", page)
	}

	// A state change without the CSRF token is refused; with it, it works.
	ds, _ := db.EventDeliveries(context.Background(), seq)
	id := strconv.FormatUint(ds[0].ID, 10)
	if resp, _ := c.do("POST", "/deliveries/"+id+"/replay", url.Values{"confirm": {"yes"}}); resp.StatusCode != 403 {
		t.Fatalf("replay without CSRF: %d", resp.StatusCode)
	}
	if resp, _ := c.do("POST", "/deliveries/"+id+"/replay", url.Values{"confirm": {"yes"}, "csrf": {"forged"}}); resp.StatusCode != 403 {
		t.Fatalf("replay with a wrong CSRF token: %d", resp.StatusCode)
	}
	_, page = c.do("GET", "/dead-letters", nil)
	tok := csrfOf(t, page)
	// Replay all asks first, then acts.
	if resp, page := c.do("POST", "/dead-letters/replay", url.Values{"csrf": {tok}}); resp.StatusCode != 200 || !strings.Contains(page, "Send all 1 dead deliveries again?") {
		t.Fatalf("replay all without confirm: %d", resp.StatusCode)
	}
	if resp, _ := c.do("POST", "/dead-letters/replay", url.Values{"csrf": {tok}, "confirm": {"yes"}}); resp.StatusCode != 303 {
		t.Fatalf("replay all: %d", resp.StatusCode)
	}
	if n, _ := db.CountDead(context.Background()); n != 0 {
		t.Fatalf("dead after replay = %d", n)
	}
	if resp, _ := c.do("POST", "/logout", url.Values{"csrf": {tok}}); resp.StatusCode != 303 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if resp, _ := c.do("GET", "/", nil); resp.StatusCode != 303 {
		t.Fatalf("after logout: %d", resp.StatusCode)
	}
}

// No configured secret appears in any page or API answer.
func TestUI_NoSecretsInPages(t *testing.T) {
	addr, _, seq := newUIServer(t)
	c := logIn(t, addr)
	var all strings.Builder
	for _, p := range []string{"/", "/events", "/events/" + strconv.FormatUint(seq, 10), "/dead-letters", "/config", "/destinations",
		"/api/v1/stats", "/api/v1/events", "/api/v1/events/" + strconv.FormatUint(seq, 10), "/api/v1/dead-letters", "/metrics"} {
		resp, page := c.do("GET", p, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d\n%s", p, resp.StatusCode, page)
		}
		all.WriteString(page)
	}
	for _, s := range uiSecretValues {
		if strings.Contains(all.String(), s) {
			t.Errorf("a page shows the secret %q", s)
		}
	}
	if !strings.Contains(all.String(), "https://hooks.example.com/in/shop") {
		t.Error("the config page does not show the source URL")
	}
	if !strings.Contains(all.String(), "hookbox_requests_total") {
		t.Error("/metrics has no request counter")
	}
	for _, counter := range []string{"hookbox_commits_total", "hookbox_commit_writes_total", "hookbox_pages_written_total"} {
		if !regexp.MustCompile(`(?m)^` + counter + ` [1-9]`).MatchString(all.String()) {
			t.Errorf("/metrics has no non-zero %s", counter)
		}
	}
}
