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

// Two admins demote each other with 50 requests at once (issue 42, broken
// 3): exactly one admin remains, every request answers 200 or, for the
// survivor's, 409 with the reason (401 once its sender was demoted), and
// the survivor cannot demote or remove itself. On one bbolt node, and on
// two PostgreSQL nodes over one database.
func TestLastAdmin_ConcurrentDemotions(t *testing.T) {
	t.Run("Bbolt", func(t *testing.T) {
		db, err := bboltstore.Open(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		lastAdminRace(t, []matrixStore{db})
	})
	t.Run("TwoPostgresNodes", func(t *testing.T) {
		url := pgtest.URL(t)
		var nodes []matrixStore
		for range 2 {
			db, err := postgres.Open(context.Background(), url, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			nodes = append(nodes, db)
		}
		lastAdminRace(t, nodes)
	})
}

func lastAdminRace(t *testing.T, stores []matrixStore) {
	ctx := context.Background()
	cfg := mustConfig(t, strings.Replace(apiConfig, `password = "pw-1234"`, "", 1))
	const pw = "race-password-1"
	hash, err := access.HashPassword(pw)
	if err != nil {
		t.Fatal(err)
	}
	var accesses []*access.Service
	var bases []string
	for i, db := range stores {
		a, err := access.New(ctx, cfg.Status, db, db, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			for _, name := range []string{"ann", "bob"} {
				if err := a.AddUser(ctx, app.Who{Actor: "test", Via: "cli", From: "local"}, name, app.RoleAdmin, hash); err != nil {
					t.Fatal(err)
				}
			}
		} else if err := a.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		a.Now = time.Now
		srv := web.New(cfg, web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping, Access: a, Now: time.Now,
			Pauser: app.NewPauser(cfg, db, nil, time.Now)})
		accesses = append(accesses, a)
		bases = append(bases, "http://"+serve(t, srv.App()))
	}
	// Each admin logs in on each node first, as a browser does: the race
	// is between the changes, not the password checks.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	csrfRe := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	type session struct {
		cookie *http.Cookie
		csrf   string
	}
	sessions := map[string]session{} // base + " " + user
	for _, base := range bases {
		for _, user := range []string{"ann", "bob"} {
			res, err := client.PostForm(base+"/login", url.Values{"user": {user}, "password": {pw}})
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			var ss session
			for _, c := range res.Cookies() {
				if c.Name == "hookbox_session" {
					ss.cookie = c
				}
			}
			if ss.cookie == nil {
				t.Fatalf("login of %s on %s: %d, no session", user, base, res.StatusCode)
			}
			req, _ := http.NewRequest("GET", base+"/", nil)
			req.AddCookie(ss.cookie)
			res, err = client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(res.Body)
			res.Body.Close()
			m := csrfRe.FindSubmatch(page)
			if m == nil {
				t.Fatalf("login of %s on %s: no CSRF token on the page (%d)", user, base, res.StatusCode)
			}
			ss.csrf = string(m[1])
			sessions[base+" "+user] = ss
		}
	}
	do := func(base, user, method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		ss := sessions[base+" "+user]
		req.AddCookie(ss.cookie)
		req.Header.Set("X-CSRF-Token", ss.csrf)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0, ""
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	const n = 50
	codes := make([]int, n)
	bodies := make([]string, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			by, other := "ann", "bob"
			if i%2 == 1 {
				by, other = other, by
			}
			<-start
			codes[i], bodies[i] = do(bases[i%len(bases)], by, "POST", "/api/v1/users/"+other+"/role", `{"role": "viewer"}`)
		}()
	}
	close(start)
	wg.Wait()

	if err := accesses[0].Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var admins []string
	for _, u := range accesses[0].Users() {
		if u.Role == app.RoleAdmin {
			admins = append(admins, u.Name)
		}
	}
	if len(admins) != 1 {
		t.Fatalf("admins %q after %d concurrent demotions (answers %v); want exactly one", admins, n, codes)
	}
	count := map[int]int{}
	for i, code := range codes {
		count[code]++
		switch code {
		case http.StatusOK, http.StatusUnauthorized: // 401: its sender was demoted, its session ended
		case http.StatusConflict:
			if !strings.Contains(bodies[i], "last admin") {
				t.Errorf("request %d: 409 %s; want the reason", i, bodies[i])
			}
		default:
			t.Errorf("request %d: %d %s; want 200, 403 or 409", i, code, bodies[i])
		}
	}
	if count[http.StatusOK] == 0 {
		t.Errorf("answers %v: no demotion went through", count)
	}
	t.Logf("answers by status: %v; %s remains", count, admins[0])

	// The survivor cannot demote or remove itself, on any node: 409 with
	// the reason.
	for _, a := range accesses {
		if err := a.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, base := range bases {
		for _, c := range []struct{ method, path, body string }{
			{"POST", "/api/v1/users/" + admins[0] + "/role", `{"role": "operator"}`},
			{"DELETE", "/api/v1/users/" + admins[0], ""},
		} {
			code, body := do(base, admins[0], c.method, c.path, c.body)
			if code != http.StatusConflict || !strings.Contains(body, "last admin") {
				t.Errorf("%s %s by the last admin: %d %s; want 409 with the reason", c.method, c.path, code, body)
			}
		}
	}
	es, err := accesses[0].Audit(ctx, app.AuditQuery{Action: app.AuditUserRole, Result: app.AuditFailed, Limit: app.MaxAuditLimit})
	if err != nil {
		t.Fatal(err)
	}
	if want := count[http.StatusConflict] + len(bases); len(es) != want {
		t.Errorf("%d failed role changes in the audit log; want %d", len(es), want)
	}
	for _, e := range es {
		if !strings.Contains(e.Detail, "last admin") {
			t.Errorf("audit %+v: want the reason", e)
		}
	}
}
