package alert_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/alert"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
)

// jsonSink is an alert URL that records the JSON bodies it is posted,
// answering status.
type jsonSink struct {
	mu     sync.Mutex
	bodies []map[string]any
	status int
	url    string
	more   chan struct{} // cap 1: a body was recorded
}

func newJSONSink(t *testing.T) *jsonSink {
	s := &jsonSink{status: 200, more: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Errorf("alert body %q: %v", raw, err)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.bodies = append(s.bodies, m)
		select {
		case s.more <- struct{}{}:
		default:
		}
		w.WriteHeader(s.status)
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *jsonSink) got() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]map[string]any(nil), s.bodies...)
}

// wait returns once n bodies are recorded (true), or when within has
// passed or stop is closed (false).
func (s *jsonSink) wait(n int, within time.Duration, stop <-chan struct{}) bool {
	timeout := time.After(within)
	for len(s.got()) < n {
		select {
		case <-s.more:
		case <-stop:
			return false
		case <-timeout:
			return false
		}
	}
	return true
}

func (s *jsonSink) answer(status int) {
	s.mu.Lock()
	s.status = status
	s.mu.Unlock()
}

// destAlerter is an alerter of destination pos over a bbolt store, with
// failing_for 5s, posting to url (none: "") and, with email, handing each
// alert to it; its clock is *now.
func destAlerter(t *testing.T, url string, email func(app.AlertMessage), now *time.Time) (*alert.Alerter, *bboltstore.DB) {
	t.Helper()
	toml := "[server]\npublic_url = \"https://hooks.shop.example\"\n[alerts]\nfailing_for = \"5s\"\n"
	if url != "" {
		toml += "url = \"" + url + "\"\n"
	}
	toml += "[[destination]]\nname = \"pos\"\nurl = \"http://127.0.0.1:1/\"\n"
	cfg, err := config.Parse("t.toml", toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	if email != nil {
		cfg.Alerts.EmailTo = []string{"ops@shop.example"} // what the email part loads; Enabled reads it
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a := alert.New(cfg, db)
	a.Health, a.Email, a.Now = db, email, func() time.Time { return *now }
	return a, db
}

// A destination failing for failing_for gets one destination_failing
// alert however often the alerter looks, and one destination_recovered
// when it delivers again; each carries its kind, destination, a subject,
// and a text that says since when, how many wait and where to look; the
// same message goes to the URL and to Email.
func TestAlerter_DestinationEpisode(t *testing.T) {
	sink := newJSONSink(t)
	var mu sync.Mutex
	var emails []app.AlertMessage
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	a, db := destAlerter(t, sink.url, func(m app.AlertMessage) { mu.Lock(); emails = append(emails, m); mu.Unlock() }, &now)
	ctx := context.Background()
	since := now
	if err := db.SaveDestinationHealth(ctx, "pos", app.DestinationHealth{FailingSince: since, LastError: "HTTP 500", NextTry: since.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		now = now.Add(2 * time.Second)
		a.CheckDestinations(ctx)
	}
	got := sink.got()
	if len(got) != 1 {
		t.Fatalf("alerts after 6 s failing = %v; want one", got)
	}
	if got[0]["kind"] != app.AlertDestinationFailing || got[0]["destination"] != "pos" {
		t.Errorf("failing alert = %v; want kind %s, destination pos", got[0], app.AlertDestinationFailing)
	}
	text, _ := got[0]["text"].(string)
	for _, want := range []string{"pos", "failing since 2026-12-03 08:00:00 UTC", "HTTP 500", "0 deliveries wait", "next try is at 2026-12-03 08:01:00 UTC", "https://hooks.shop.example/"} {
		if !strings.Contains(text, want) {
			t.Errorf("failing alert text lacks %q: %s", want, text)
		}
	}
	for range 3 {
		now = now.Add(time.Minute)
		a.CheckDestinations(ctx)
	}
	if n := len(sink.got()); n != 1 {
		t.Fatalf("%d alerts while the same episode goes on; want still 1", n)
	}

	back := now
	if err := db.SaveDestinationHealth(ctx, "pos", app.DestinationHealth{RecoveredAt: back}); err != nil {
		t.Fatal(err)
	}
	a.CheckDestinations(ctx)
	a.CheckDestinations(ctx)
	got = sink.got()
	if len(got) != 2 || got[1]["kind"] != app.AlertDestinationRecovered || got[1]["destination"] != "pos" {
		t.Fatalf("alerts after the recovery = %v; want the failing one, then one %s", got, app.AlertDestinationRecovered)
	}
	if text, _ := got[1]["text"].(string); !strings.Contains(text, "after failing for 3m6s") {
		t.Errorf("recovery text = %q; want how long it failed", text)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(emails) != 2 || emails[0].Kind != app.AlertDestinationFailing || emails[1].Kind != app.AlertDestinationRecovered ||
		!strings.Contains(emails[0].Subject, "pos failing since") || emails[0].Text != got[0]["text"] {
		t.Errorf("emails = %+v; want the same two alerts, with subjects", emails)
	}
}

// An alert URL that refuses the alert (and no email) leaves it owed: the
// next check sends it again; a short episode (under failing_for) sends
// nothing, not even a recovery.
func TestAlerter_DestinationRetriedAndShort(t *testing.T) {
	sink := newJSONSink(t)
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	a, db := destAlerter(t, sink.url, nil, &now)
	ctx := context.Background()
	if err := db.SaveDestinationHealth(ctx, "pos", app.DestinationHealth{FailingSince: now}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	a.CheckDestinations(ctx)
	if err := db.SaveDestinationHealth(ctx, "pos", app.DestinationHealth{RecoveredAt: now}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	a.CheckDestinations(ctx)
	if got := sink.got(); len(got) != 0 {
		t.Fatalf("a 1 s episode sent %v; want nothing", got)
	}

	if err := db.SaveDestinationHealth(ctx, "pos", app.DestinationHealth{FailingSince: now}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Second)
	sink.answer(500)
	a.CheckDestinations(ctx)
	sink.answer(200)
	a.CheckDestinations(ctx)
	a.CheckDestinations(ctx)
	got := sink.got()
	if len(got) != 2 || got[0]["kind"] != app.AlertDestinationFailing || got[1]["kind"] != app.AlertDestinationFailing {
		t.Fatalf("alerts = %v; want the refused one, then the same once more", got)
	}
}

// Email only (no URL): the alerts go out all the same.
func TestAlerter_DestinationEmailOnly(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	var emails []app.AlertMessage
	a, db := destAlerter(t, "", func(m app.AlertMessage) { emails = append(emails, m) }, &now)
	ctx := context.Background()
	if err := db.SaveDestinationHealth(ctx, "pos", app.DestinationHealth{FailingSince: now}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(5 * time.Second)
	a.CheckDestinations(ctx)
	if len(emails) != 1 || emails[0].Kind != app.AlertDestinationFailing || emails[0].Destination != "pos" {
		t.Fatalf("emails = %+v; want one destination_failing of pos", emails)
	}
}

// A reload that configures an alert URL (none at start) reaches the
// watcher already running: the failing destination's alert goes out with
// no restart.
func TestAlerter_WatchDestinationsAfterReload(t *testing.T) {
	sink := newJSONSink(t)
	now := time.Now()
	a, db := destAlerter(t, "", nil, &now)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := db.SaveDestinationHealth(ctx, "pos", app.DestinationHealth{FailingSince: now.Add(-time.Minute), LastError: "HTTP 500"}); err != nil {
		t.Fatal(err)
	}
	watched := make(chan struct{})
	go func() { a.WatchDestinations(ctx, nil); close(watched) }()

	toml := "[alerts]\nfailing_for = \"2s\"\nurl = \"" + sink.url + "\"\n[[destination]]\nname = \"pos\"\nurl = \"http://127.0.0.1:1/\"\n"
	cfg, err := config.Parse("t.toml", toml, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.Apply(cfg)
	if !sink.wait(1, 20*time.Second, watched) {
		select {
		case <-watched:
			t.Fatal("the watcher returned: alerts were off at start")
		default:
		}
		t.Fatal("no alert after the reload configured a URL")
	}
	if got := sink.got(); got[0]["kind"] != app.AlertDestinationFailing {
		t.Errorf("alert = %v; want %s", got[0], app.AlertDestinationFailing)
	}
}
