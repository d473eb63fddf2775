package ui_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
	"hookbox/ui"
)

// After a reload: a delivery whose destination the config in force no
// longer has says so on its event's page; every page says which config
// runs and since when, and shows a refused config's mistakes.
func TestUI_Reload(t *testing.T) {
	cfg, err := config.Parse("/etc/hookbox/config.toml", `[[source]]
name = "shop"
provider = "shopify"
secret = "x"
[[destination]]
name = "erp"
url = "https://erp.example.com"
[[route]]
source = "shop"
to = ["erp"]
`, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now()
	e := &app.Event{Source: "shop", ID: "o-1", Topic: "orders/create", ReceivedAt: now, Body: []byte(`{}`)}
	plan := &app.Plan{Direct: []app.Direct{{Dest: "erp", Route: "route-1"}, {Dest: "pos", Route: "gone"}}}
	if _, err := db.Accept(context.Background(), e, now.Add(time.Hour), plan); err != nil {
		t.Fatal(err)
	}
	running := app.NewRunning(cfg, time.Date(2026, 12, 3, 7, 0, 0, 0, time.UTC))
	a := fiber.New()
	ui.New(ui.Deps{Running: running, Store: db}).Mount(func(method, path string, h fiber.Handler) { a.Add(method, path, h) })
	get := func(path string) string {
		t.Helper()
		resp, err := a.Test(httptest.NewRequest("GET", path, nil), -1)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d\n%s", path, resp.StatusCode, b)
		}
		return string(b)
	}

	page := get("/events/1")
	if got := strings.Count(page, "Destination no longer configured"); got != 1 {
		t.Errorf("the event page says %d times that a destination is no longer configured; want once (pos):\n%s", got, page)
	}
	if !strings.Contains(page, "the config in force has no destination pos") {
		t.Error("the event page does not name the destination no longer configured")
	}
	if want := `Config loaded <time datetime="2026-12-03T07:00:00Z" title="2026-12-03 07:00:00 UTC">2026-12-03 07:00:00 UTC</time> from /etc/hookbox/config.toml.`; !strings.Contains(page, want) {
		t.Errorf("the page lacks %q", want)
	}
	if strings.Contains(page, "config-refused") {
		t.Error("a refusal banner without a refusal")
	}

	// Dead, it is listed as such among the dead letters.
	ds, err := db.EventDeliveries(context.Background(), e.Seq)
	if err != nil || len(ds) != 2 {
		t.Fatalf("deliveries: %v, %v", ds, err)
	}
	for _, d := range ds {
		rec := app.AttemptRecord{ID: d.ID, Attempt: &app.Attempt{Start: now, Status: 500}, State: app.Dead}
		if errs := db.RecordAttempts(context.Background(), []app.AttemptRecord{rec}); errs[0] != nil {
			t.Fatal(errs[0])
		}
	}
	page = get("/dead-letters")
	if got := strings.Count(page, "(no longer configured)"); got != 1 {
		t.Errorf("the dead letters say %d times that a destination is no longer configured; want once (pos):\n%s", got, page)
	}

	running.Refuse("/etc/hookbox/config.toml", now, errors.Join(
		&app.ConfigError{File: "/etc/hookbox/config.toml", Key: "route.to", Reason: `no destination "crm"`},
		&app.ConfigError{File: "/etc/hookbox/config.toml", Key: "route[1].filter", Reason: "<syntax error>"}))
	page = get("/config")
	for _, want := range []string{`id="config-refused"`, `/etc/hookbox/config.toml: route.to: no destination &#34;crm&#34;`,
		`/etc/hookbox/config.toml: route[1].filter: &lt;syntax error&gt;`, "keeps running"} {
		if !strings.Contains(page, want) {
			t.Errorf("the refused config's banner lacks %s", want)
		}
	}
}
