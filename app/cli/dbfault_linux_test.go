//go:build linux

package cli_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/storage/postgres/pgtest"
)

// The database goes out of a PostgreSQL node's reach (down, or refusing
// it), then comes back: it shows as a full disk does on bbolt. Senders
// get 503, never a 200 for an event not stored; the overview shows the
// banner with what to check, /healthz says degraded, hookbox_storage_failing
// is 1, alerts.url hears of it and of the recovery; once the database is
// back the node is healthy again without a request, and every acknowledged
// event is delivered. The password never shows.
func TestFault_DatabaseGoneVisible(t *testing.T) {
	dbURL := pgtest.Database(t)
	u, _ := url.Parse(dbURL)
	password, _ := u.User.Password()
	sink := newLedgerSink(t, 200)
	alertURL, alertTexts := newAlertSink(t)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["1s", "2s", "5s", "10s", "30s"]`),
		fmt.Sprintf("[alerts]\nurl = %q\ncheck = \"@every 1s\"\n[storage]\nbackend = \"postgres\"\nurl_env = \"E2E_DATABASE_URL\"\nlease = \"10s\"\n", alertURL))
	p := startWith(t, config, []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_STATUS_PASSWORD=pw-e2e", "E2E_DATABASE_URL=" + dbURL})
	var acked []string
	send := func(id string) int {
		code, _, _ := postRaw(t, p.addr, id, []byte(fmt.Sprintf(`{"id": %q}`, id)))
		if code == 200 {
			acked = append(acked, id)
		}
		return code
	}
	for i := range 20 {
		if code := send(fmt.Sprint("before-", i)); code != 200 {
			t.Fatalf("before: %d", code)
		}
	}

	pgtest.SetReachable(t, dbURL, false)
	gone := time.Now()
	for i := range 20 {
		if code := send(fmt.Sprint("gone-", i)); code != 503 {
			t.Fatalf("a webhook sent while the database is gone got %d, want 503", code)
		}
	}
	code, health := getAuth(t, p.addr, "/healthz")
	_, page := getAuth(t, p.addr, "/")
	_, metrics := getAuth(t, p.addr, "/metrics")
	if code != 503 || !strings.Contains(health, `"degraded"`) {
		t.Errorf("/healthz with the database gone: %d %s", code, health)
	}
	if !regexp.MustCompile(`Storage is failing since <time[^>]*>[^<]*</time>, [^<]+ ago: \d+ webhooks? refused`).MatchString(page) ||
		!strings.Contains(page, "Check the PostgreSQL database") {
		t.Errorf("the overview shows no storage banner, or not what to check:\n%s", page)
	}
	if !regexp.MustCompile(`(?m)^hookbox_storage_failing 1$`).MatchString(metrics) {
		t.Errorf("/metrics does not say storage is failing:\n%s", grepLines(metrics, "hookbox_storage"))
	}
	apptest.Within(10*time.Second, func() bool { return strings.Contains(alertTexts(), "storage is failing") })
	if !strings.Contains(alertTexts(), "storage is failing") || !strings.Contains(alertTexts(), "Check the PostgreSQL database") {
		t.Errorf("no alert about storage, or not what to check: %q", alertTexts())
	}

	pgtest.SetReachable(t, dbURL, true)
	back := time.Now()
	apptest.Until(t, 20*time.Second, func() error {
		if code, _ := getAuth(t, p.addr, "/healthz"); code != 200 {
			return fmt.Errorf("/healthz not 200 after the database came back:\n%s", p.logText())
		}
		return nil
	})
	t.Logf("database gone for %v; /healthz 200 again %v after it came back", back.Sub(gone).Round(time.Millisecond), time.Since(back).Round(time.Millisecond))
	for i := range 20 {
		if code := send(fmt.Sprint("after-", i)); code != 200 {
			t.Fatalf("after: %d", code)
		}
	}
	sink.waitDelivered(t, acked, 30*time.Second)
	apptest.Within(10*time.Second, func() bool { return strings.Contains(alertTexts(), "works again") })
	if !strings.Contains(alertTexts(), "works again") {
		t.Errorf("no alert that storage works again: %q", alertTexts())
	}
	p.stop(t)
	if password == "" {
		t.Fatal("the test database's URL has no password: the masking is not tested")
	}
	for what, text := range map[string]string{"/healthz": health, "the overview": page, "/metrics": metrics, "the alerts": alertTexts(), "the log": p.logText()} {
		if strings.Contains(text, password) {
			t.Errorf("%s shows the database password", what)
		}
	}
}
