package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/web"
)

// fakeReload is what a reload of /etc/hookbox/config.toml did: a
// destination and a route added and a key waiting for a restart, or
// (refused) two mistakes.
func fakeReload(refused bool) app.Reloaded {
	const path = "/etc/hookbox/config.toml"
	if refused {
		return app.Reloaded{Path: path, Refused: &app.Refusal{Path: path, At: time.Now(), Reasons: []string{
			path + ":12: destination[0] (pos).concurency: unknown key; did you mean concurrency?",
			path + `:20: route[0] (r1).to[0]: no [[destination]] named "nwe"; did you mean new?`,
		}}}
	}
	return app.Reloaded{Path: path, Diff: app.ConfigDiff{Destinations: app.Change{Added: []string{"new"}},
		Routes: app.Change{Added: []string{"to-new"}}, Restart: []string{"server.listen"}}}
}

// POST /api/v1/reload answers what the reload changed, or 422 with every
// mistake; it is an admin's (a token's too), and the audit log names who
// reloaded and what came of it.
func TestAPI_Reload(t *testing.T) {
	refuse := false
	f := openFixtureDeps(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil, "", func(d *web.Deps) {
		d.Reload = func() app.Reloaded { return fakeReload(refuse) }
	})
	var answer struct {
		Status  string         `json:"status"`
		Path    string         `json:"path"`
		Changes app.ConfigDiff `json:"changes"`
		Error   string         `json:"error"`
		Errors  []string       `json:"errors"`
	}
	t.Run("Reloaded", func(t *testing.T) {
		code, raw := f.post("/api/v1/reload")
		if err := json.Unmarshal(raw, &answer); code != 200 || err != nil || answer.Status != "reloaded" || answer.Path != "/etc/hookbox/config.toml" ||
			strings.Join(answer.Changes.Lines(), "|") != strings.Join(fakeReload(false).Diff.Lines(), "|") {
			t.Fatalf("%d %s (%v)", code, raw, err)
		}
	})
	t.Run("Refused", func(t *testing.T) {
		refuse = true
		defer func() { refuse = false }()
		code, raw := f.post("/api/v1/reload")
		answer.Errors = nil
		if err := json.Unmarshal(raw, &answer); code != http.StatusUnprocessableEntity || err != nil || answer.Status != "refused" ||
			len(answer.Errors) != 2 || answer.Error != "config refused (2 mistakes): the running config stays in force" {
			t.Fatalf("%d %s (%v)", code, raw, err)
		}
	})
	t.Run("Roles", func(t *testing.T) {
		for _, role := range []string{"viewer", "operator", "admin"} {
			_, raw := f.postJSON("/api/v1/tokens", `{"name": "`+role+`", "role": "`+role+`"}`)
			var tok struct {
				Token string `json:"token"`
			}
			json.Unmarshal(raw, &tok)
			req, _ := http.NewRequest("POST", f.base+"/api/v1/reload", nil)
			req.Header.Set("Authorization", "Bearer "+tok.Token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := map[string]int{"viewer": 403, "operator": 403, "admin": 200}[role]; resp.StatusCode != want {
				t.Errorf("a %s token: %d; want %d", role, resp.StatusCode, want)
			}
		}
	})
	t.Run("Audit", func(t *testing.T) {
		_, raw := f.get("/api/v1/audit?action=config.reload")
		var page struct {
			Items []struct {
				Actor, Via, Target, Result, Detail string
			} `json:"items"`
		}
		if err := json.Unmarshal(raw, &page); err != nil || len(page.Items) != 5 {
			t.Fatalf("audit: %s (%v); want 5 entries", raw, err)
		}
		got := []string{}
		for _, e := range page.Items {
			got = append(got, e.Actor+" "+e.Result+" "+e.Target+" "+e.Detail)
		}
		want := []string{
			"token:admin ok /etc/hookbox/config.toml destination added: new; route added: to-new; waits for a restart (the running value stays): server.listen",
			"token:operator denied  your role (operator) may not reload the config: an admin may",
			"token:viewer denied  your role (viewer) may not reload the config: an admin may",
			"ops failed /etc/hookbox/config.toml 422 config refused (2 mistakes): the running config stays in force: /etc/hookbox/config.toml:12: destination[0] (pos).concurency: unknown key; did you mean concurrency?",
			"ops ok /etc/hookbox/config.toml destination added: new; route added: to-new; waits for a restart (the running value stays): server.listen",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("audit entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}
