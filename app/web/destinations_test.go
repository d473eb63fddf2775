package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// The overview's destination row pauses and resumes it with the page's
// CSRF form: paused, it says since when, by whom, why and how many wait;
// a Retry-After hold says until when.
func TestUI_PauseResumeButton(t *testing.T) {
	addr, db, _ := newUIServer(t)
	c := logIn(t, addr)
	_, page := c.do("GET", "/", nil)
	if !strings.Contains(page, `action="/destinations/pos/pause"`) {
		t.Fatalf("overview has no Pause button for pos:\n%s", page)
	}
	if resp, _ := c.do("POST", "/destinations/pos/pause", url.Values{"reason": {"ERP maintenance"}}); resp.StatusCode != 403 {
		t.Fatalf("pause without CSRF: %d; want 403", resp.StatusCode)
	}
	tok := csrfOf(t, page)
	if resp, _ := c.do("POST", "/destinations/pos/pause", url.Values{"csrf": {tok}, "reason": {"ERP maintenance"}}); resp.StatusCode != 303 {
		t.Fatalf("pause: %d; want 303", resp.StatusCode)
	}
	cs, err := db.DestinationControls(context.Background())
	if c := cs["pos"]; err != nil || !c.Paused || c.PausedBy != "ops" || c.Reason != "ERP maintenance" {
		t.Fatalf("stored control %+v, %v; want paused by ops for ERP maintenance", c, err)
	}
	db.HoldDestination(context.Background(), "pos", time.Now().Add(time.Hour))
	_, page = c.do("GET", "/", nil)
	for _, want := range []string{"paused since", "by ops", "ERP maintenance", "0 waiting", `action="/destinations/pos/resume"`, "(Retry-After)"} {
		if !strings.Contains(page, want) {
			t.Errorf("paused overview lacks %q", want)
		}
	}
	if resp, _ := c.do("POST", "/destinations/pos/resume", url.Values{"csrf": {tok}}); resp.StatusCode != 303 {
		t.Fatalf("resume: %d; want 303", resp.StatusCode)
	}
	_, page = c.do("GET", "/", nil)
	if strings.Contains(page, "paused since") || !strings.Contains(page, `action="/destinations/pos/pause"`) {
		t.Errorf("resumed overview still paused:\n%s", page)
	}
	if resp, _ := c.do("POST", "/destinations/nope/pause", url.Values{"csrf": {tok}}); resp.StatusCode != 404 {
		t.Errorf("pause of an unknown destination: %d; want 404", resp.StatusCode)
	}
}

// The API pauses with a JSON reason, by the Basic-auth user; a body that
// is not that JSON is refused with the reason; GET lists the pause.
func TestAPI_PauseResume(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	post := func(path, body string) (int, string) {
		req, _ := http.NewRequest("POST", f.base+path, strings.NewReader(body))
		req.SetBasicAuth("ops", "pw-1234")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/api/v1/destinations/pos/pause", `{"reason": 7}`); code != 400 || !strings.Contains(body, "must be JSON like") {
		t.Fatalf("pause with a bad body: %d %s; want 400 with the reason", code, body)
	}
	if code, body := post("/api/v1/destinations/pos/pause", `{"reason": "ERP maintenance"}`); code != 200 {
		t.Fatalf("pause: %d %s", code, body)
	}
	_, raw := f.get("/api/v1/destinations")
	var out struct {
		Destinations []struct {
			Name         string     `json:"name"`
			Paused       bool       `json:"paused"`
			PausedAt     *time.Time `json:"paused_at"`
			PausedBy     string     `json:"paused_by"`
			PausedReason string     `json:"paused_reason"`
		} `json:"destinations"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out.Destinations) < 2 {
		t.Fatalf("GET /api/v1/destinations: %s, %v", raw, err)
	}
	pos, other := out.Destinations[0], out.Destinations[1]
	if pos.Name != "pos" || !pos.Paused || pos.PausedAt == nil || pos.PausedBy != "ops" || pos.PausedReason != "ERP maintenance" || other.Paused {
		t.Fatalf("destinations after pausing pos: %s", raw)
	}
	if code, body := post("/api/v1/destinations/pos/resume", ""); code != 200 || !strings.Contains(body, `"paused":false`) {
		t.Fatalf("resume: %d %s", code, body)
	}
	if code, body := post("/api/v1/destinations/nope/resume", ""); code != 404 || !strings.Contains(body, "no such destination") {
		t.Fatalf("resume of an unknown destination: %d %s; want 404", code, body)
	}
}

// paused_by names who paused: the user hookbox pause logged in as (it
// sent X-Hookbox-Client: cli, which named every such pause "cli" on the
// old main), or a token as the audit log names it; GET
// /api/v1/destinations and the overview say so.
func TestAPI_PausedByNamesWho(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	secret, err := f.srv.Access().CreateToken(t.Context(), app.Who{Actor: "ops", Via: "cli", From: "local"}, "deploy-bot", app.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	pausedBy := func(auth func(*http.Request)) string {
		t.Helper()
		req, _ := http.NewRequest("POST", f.base+"/api/v1/destinations/pos/pause", strings.NewReader(`{"reason": "ERP maintenance"}`))
		req.Header.Set("X-Hookbox-Client", "cli") // as hookbox pause sent it
		auth(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("pause: %d", resp.StatusCode)
		}
		_, raw := f.get("/api/v1/destinations")
		var out struct {
			Destinations []struct {
				Name     string `json:"name"`
				PausedBy string `json:"paused_by"`
			} `json:"destinations"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || len(out.Destinations) == 0 || out.Destinations[0].Name != "pos" {
			t.Fatalf("GET /api/v1/destinations: %s, %v", raw, err)
		}
		return out.Destinations[0].PausedBy
	}
	if got := pausedBy(func(r *http.Request) { r.SetBasicAuth("ops", "pw-1234") }); got != "ops" {
		t.Errorf("paused by the user ops through hookbox pause: paused_by %q, want ops", got)
	}
	if code, _ := f.post("/api/v1/destinations/pos/resume"); code != 200 {
		t.Fatalf("resume: %d", code)
	}
	if got := pausedBy(func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+secret) }); got != "token:deploy-bot" {
		t.Errorf("paused with the token deploy-bot: paused_by %q, want token:deploy-bot", got)
	}
	if _, page := f.get("/"); !strings.Contains(string(page), "by token:deploy-bot") {
		t.Errorf("the overview does not say the token paused pos")
	}
}
