package web_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/receive"
	"hookbox/app/web"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

// matrixStore is a store the role matrix runs on.
type matrixStore interface {
	web.Store
	app.AccessStore
	app.AuditStore
	app.ControlStore
	app.IngestStore
	Ping(context.Context) error
	Close() error
}

// expectedRoles is the matrix's own table of every route: the weakest
// role, whether a token may use it, and whether it is a page (tokens are
// never taken there). It is written apart from routeRules on purpose: a
// route the server registers that has no entry here fails the test.
var expectedRoles = map[string]struct {
	role    app.Role
	noToken bool
	page    bool
}{
	"GET /api/v1/dead-letters":                      {role: app.RoleViewer},
	"GET /api/v1/deliveries/:id":                    {role: app.RoleViewer},
	"GET /api/v1/stats":                             {role: app.RoleViewer},
	"GET /api/v1/config":                            {role: app.RoleViewer},
	"GET /api/v1/events":                            {role: app.RoleViewer},
	"GET /api/v1/events/:seq":                       {role: app.RoleViewer},
	"GET /api/v1/events/:seq/body":                  {role: app.RoleViewer},
	"GET /api/v1/destinations":                      {role: app.RoleViewer},
	"GET /api/v1/stream":                            {role: app.RoleViewer},
	"GET /metrics":                                  {role: app.RoleViewer},
	"POST /api/v1/dead-letters/replay":              {role: app.RoleOperator},
	"POST /api/v1/dead-letters/:id/replay":          {role: app.RoleOperator},
	"POST /api/v1/deliveries/:id/replay":            {role: app.RoleOperator},
	"POST /api/v1/deliveries/replay":                {role: app.RoleOperator},
	"POST /api/v1/replay":                           {role: app.RoleOperator},
	"POST /api/v1/deliveries/:id/retry":             {role: app.RoleOperator},
	"POST /api/v1/destinations/:name/retry":         {role: app.RoleOperator},
	"POST /api/v1/destinations/:name/pause":         {role: app.RoleOperator},
	"POST /api/v1/destinations/:name/resume":        {role: app.RoleOperator},
	"GET /api/v1/backup":                            {role: app.RoleAdmin},
	"GET /api/v1/sources/:name/upstream":            {role: app.RoleOperator},
	"POST /api/v1/sources/:name/upstream/check":     {role: app.RoleOperator},
	"POST /api/v1/upstream/check":                   {role: app.RoleOperator},
	"POST /api/v1/reload":                           {role: app.RoleAdmin},
	"GET /api/v1/sources/:name/quarantine":          {role: app.RoleOperator},
	"POST /api/v1/sources/:name/quarantine/recheck": {role: app.RoleOperator},
	"DELETE /api/v1/sources/:name/quarantine":       {role: app.RoleOperator},
	"GET /api/v1/audit":                             {role: app.RoleAdmin},
	"GET /api/v1/users":                             {role: app.RoleAdmin},
	"GET /api/v1/tokens":                            {role: app.RoleAdmin},
	"POST /api/v1/users":                            {role: app.RoleAdmin, noToken: true},
	"DELETE /api/v1/users/:name":                    {role: app.RoleAdmin, noToken: true},
	"POST /api/v1/users/:name/role":                 {role: app.RoleAdmin, noToken: true},
	"POST /api/v1/users/:name/password":             {role: app.RoleAdmin, noToken: true},
	"POST /api/v1/tokens":                           {role: app.RoleAdmin, noToken: true},
	"DELETE /api/v1/tokens/:name":                   {role: app.RoleAdmin, noToken: true},
	"GET /":                                         {role: app.RoleViewer, page: true},
	"GET /events":                                   {role: app.RoleViewer, page: true},
	"GET /events/:seq":                              {role: app.RoleViewer, page: true},
	"GET /dead-letters":                             {role: app.RoleViewer, page: true},
	"GET /config":                                   {role: app.RoleViewer, page: true},
	"GET /quarantine":                               {role: app.RoleOperator, page: true},
	"POST /sources/:name/quarantine/recheck":        {role: app.RoleOperator, page: true},
	"POST /sources/:name/quarantine/clear":          {role: app.RoleOperator, page: true},
	"GET /destinations":                             {role: app.RoleViewer, page: true},
	"POST /dead-letters/replay":                     {role: app.RoleOperator, page: true},
	"POST /deliveries/:id/replay":                   {role: app.RoleOperator, page: true},
	"POST /deliveries/:id/retry":                    {role: app.RoleOperator, page: true},
	"POST /destinations/:name/retry":                {role: app.RoleOperator, page: true},
	"POST /replay":                                  {role: app.RoleOperator, page: true},
	"POST /destinations/:name/pause":                {role: app.RoleOperator, page: true},
	"POST /destinations/:name/resume":               {role: app.RoleOperator, page: true},
	"GET /audit":                                    {role: app.RoleAdmin, noToken: true, page: true},
	"GET /team":                                     {role: app.RoleAdmin, noToken: true, page: true},
	"POST /team/users":                              {role: app.RoleAdmin, noToken: true, page: true},
	"POST /team/users/:name/role":                   {role: app.RoleAdmin, noToken: true, page: true},
	"POST /team/users/:name/remove":                 {role: app.RoleAdmin, noToken: true, page: true},
	"POST /team/tokens":                             {role: app.RoleAdmin, noToken: true, page: true},
	"POST /team/tokens/:name/revoke":                {role: app.RoleAdmin, noToken: true, page: true},
}

// publicInMatrix are the routes without a role: the webhook endpoint, the
// health check, the login form and the logout (which would end the
// sessions under test).
var publicInMatrix = map[string]bool{"POST /in/:source": true, "GET /healthz": true, "GET /login": true, "POST /login": true, "POST /logout": true}

// The role matrix (issue 30's first acceptance point): every /api/v1 route
// and every page, walked from the registered routes, × every kind of
// caller → the expected status, on both stores.
func TestRoleMatrix(t *testing.T) {
	t.Run("Bbolt", func(t *testing.T) {
		db, err := bboltstore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		roleMatrix(t, db)
	})
	t.Run("Postgres", func(t *testing.T) {
		db, err := postgres.Open(context.Background(), pgtest.URL(t), postgres.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		roleMatrix(t, db)
	})
}

// caller is one kind of caller of the matrix.
type caller struct {
	name    string
	role    app.Role // app.RoleNone: nobody (anonymous, ended)
	token   bool
	session *http.Cookie
	csrf    string
	bearer  string
}

func roleMatrix(t *testing.T, db matrixStore) {
	ctx := context.Background()
	t.Cleanup(func() { db.Close() })
	cfg := mustConfig(t, strings.Replace(apiConfig, `password = "pw-1234"`, "", 1))
	var clockMu sync.Mutex
	cur := time.Now()
	clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return cur }
	acc, err := access.New(ctx, cfg.Status, db, db, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	acc.Now = clock
	who := app.Who{Actor: "test", Via: "cli", From: "local"}
	const pw = "matrix-password-1"
	hash, err := access.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	for name, role := range map[string]app.Role{"vw": app.RoleViewer, "op": app.RoleOperator, "adm": app.RoleAdmin, "gone": app.RoleAdmin} {
		if err := acc.AddUser(ctx, who, name, role, hash); err != nil {
			t.Fatal(err)
		}
	}
	secret := func(name string, role app.Role, ttl time.Duration) string {
		s, err := acc.CreateToken(ctx, who, name, role, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	viewerTok, operatorTok := secret("ci-view", app.RoleViewer, 0), secret("ci-op", app.RoleOperator, 0)
	revokedTok, expiredTok := secret("ci-revoked", app.RoleAdmin, 0), secret("ci-expired", app.RoleAdmin, time.Hour)

	srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping, Access: acc, Now: clock,
		Pauser: app.NewPauser(cfg, db, nil, clock)})
	base := "http://" + serve(t, srv.App())
	t.Cleanup(func() { srv.Shutdown(context.Background()) }) // ends the streams opened below first
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	csrfRe := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	login := func(user string) caller {
		res, err := client.PostForm(base+"/login", url.Values{"user": {user}, "password": {pw}})
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		var cookie *http.Cookie
		for _, c := range res.Cookies() {
			if c.Name == "hookbox_session" {
				cookie = c
			}
		}
		if cookie == nil {
			t.Fatalf("login as %s: %d, no session", user, res.StatusCode)
		}
		req, _ := http.NewRequest("GET", base+"/", nil)
		req.AddCookie(cookie)
		res, err = client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(res.Body)
		res.Body.Close()
		m := csrfRe.FindSubmatch(page)
		if m == nil {
			t.Fatalf("login as %s: no CSRF token on the page (%d)", user, res.StatusCode)
		}
		// The page says who is logged in, and shows admins only the
		// Team and Audit pages.
		u := acc.Users()
		for _, x := range u {
			if x.Name != user {
				continue
			}
			if who := `<span class="who" id="who">` + user + ` <small>(` + x.Role.String() + `)</small>`; !strings.Contains(string(page), who) {
				t.Errorf("the page of %s does not show %s", user, who)
			}
			if got, want := strings.Contains(string(page), `href="/team"`), x.Role == app.RoleAdmin; got != want {
				t.Errorf("the page of %s (%s) links the Team page: %v; want %v", user, x.Role, got, want)
			}
		}
		return caller{session: cookie, csrf: string(m[1])}
	}
	callers := []caller{{name: "anonymous"}}
	for _, u := range []struct {
		name string
		role app.Role
	}{{"vw", app.RoleViewer}, {"op", app.RoleOperator}, {"adm", app.RoleAdmin}} {
		c := login(u.name)
		c.name, c.role = u.name, u.role
		callers = append(callers, c)
	}
	gone := login("gone")
	gone.name = "removed user's old session"
	// A changed role ends the sessions taken under the old one.
	demoted := login("gone")
	if err := acc.SetRole(ctx, who, "gone", app.RoleViewer); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.AddCookie(demoted.session)
	if res, err := client.Do(req); err != nil || res.StatusCode != http.StatusSeeOther {
		t.Fatalf("a session after its user's role changed: %v %v; want 303 to the login", res, err)
	}
	if err := acc.RemoveUser(ctx, who, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := acc.RevokeToken(ctx, who, "ci-revoked"); err != nil {
		t.Fatal(err)
	}
	clockMu.Lock()
	cur = cur.Add(2 * time.Hour) // ci-expired has expired; sessions last 12 h
	clockMu.Unlock()
	callers = append(callers, gone,
		caller{name: "viewer token", role: app.RoleViewer, token: true, bearer: viewerTok},
		caller{name: "operator token", role: app.RoleOperator, token: true, bearer: operatorTok},
		caller{name: "revoked token", bearer: revokedTok},
		caller{name: "expired token", bearer: expiredTok})

	params := strings.NewReplacer(":id", "999999", ":seq", "999999", ":name", "nobody")
	seen := 0
	for _, r := range srv.App().GetRoutes(true) {
		if r.Method == http.MethodHead || strings.HasPrefix(r.Path, "/static") {
			continue
		}
		key := r.Method + " " + r.Path
		if publicInMatrix[key] {
			continue
		}
		want, ok := expectedRoles[key]
		if !ok {
			t.Errorf("%s: no entry in the matrix's expectedRoles", key)
			continue
		}
		seen++
		for _, c := range callers {
			req, _ := http.NewRequest(r.Method, base+params.Replace(r.Path), nil)
			if c.session != nil {
				req.AddCookie(c.session)
				req.Header.Set("X-CSRF-Token", c.csrf)
			}
			if c.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+c.bearer)
			}
			res, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body []byte
			if key == "GET /api/v1/stream" && res.StatusCode == http.StatusOK {
				// A stream answer lasts: its head is what is checked.
				if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
					t.Errorf("%s as %s: Content-Type %q", key, c.name, ct)
				}
			} else {
				body, _ = io.ReadAll(res.Body)
			}
			res.Body.Close()
			got := res.StatusCode
			// Who the server takes the caller for on this route: tokens
			// are never taken on pages.
			role := c.role
			if c.token && want.page {
				role = app.RoleNone
			}
			switch {
			case role == app.RoleNone && want.page && r.Method == http.MethodGet:
				if got != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/login") {
					t.Errorf("%s as %s: %d %s; want 303 to /login", key, c.name, got, res.Header.Get("Location"))
				}
			case role == app.RoleNone:
				if got != http.StatusUnauthorized {
					t.Errorf("%s as %s: %d %.200s; want 401", key, c.name, got, body)
				}
			case !role.Allows(want.role) || c.token && want.noToken:
				if got != http.StatusForbidden || !strings.Contains(string(body), "may") {
					t.Errorf("%s as %s: %d %.200s; want 403 with a sentence", key, c.name, got, body)
				}
			default:
				if got == http.StatusUnauthorized || got == http.StatusForbidden || got >= 500 {
					t.Errorf("%s as %s: %d %.200s; want it allowed", key, c.name, got, body)
				}
			}
		}
	}
	if seen != len(expectedRoles) {
		t.Errorf("%d routes walked; the matrix names %d", seen, len(expectedRoles))
	}
}
