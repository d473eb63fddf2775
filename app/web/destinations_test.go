package web_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"
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
