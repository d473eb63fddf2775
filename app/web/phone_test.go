package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hookbox/app"
)

// chartLabelsJS lists every label of the overview's charts whose box
// (as Chromium lays it out) reaches outside its chart or the viewport: a
// label cut at an edge. It also says how many labels it measured.
const chartLabelsJS = `(() => {
  const w = document.documentElement.clientWidth, cut = [];
  let n = 0;
  for (const svg of document.querySelectorAll("figure.chart svg")) {
    const box = svg.getBoundingClientRect();
    for (const t of svg.querySelectorAll("text")) {
      const r = t.getBoundingClientRect();
      n++;
      if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5 || r.left < 0 || r.right > w + 0.5)
        cut.push(JSON.stringify(t.textContent) + " at " + [r.left, r.top, r.right, r.bottom].map(Math.round).join(",") +
          " in " + [box.left, box.top, box.right, box.bottom].map(Math.round).join(","));
    }
  }
  return {measured: n, cut: cut};
})()`

// eventsSeenJS counts the rows of the events list that the first screen
// shows whole (below the header, above the viewport's bottom), and how
// tall a row is.
const eventsSeenJS = `(() => {
  const h = window.innerHeight, rows = [...document.querySelectorAll("table.events tbody tr")];
  const head = document.querySelector("header").getBoundingClientRect().bottom;
  const seen = rows.filter(r => { const b = r.getBoundingClientRect(); return b.top >= head - 0.5 && b.bottom <= h + 0.5; });
  const tall = rows.length ? rows[0].getBoundingClientRect().height : 0;
  return {rows: rows.length, seen: seen.length, tall: Math.round(tall), first: rows.length ? Math.round(rows[0].getBoundingClientRect().top) : 0};
})()`

// destCardsJS reads the Destinations page: per card, its state, backlog
// and last error as shown, and the buttons it offers.
const destCardsJS = `(() => {
  const out = {};
  for (const a of document.querySelectorAll("article.dest")) {
    const v = s => { const el = a.querySelector('[data-stat="' + s + '"]'); return el ? el.textContent.trim() : null; };
    out[a.dataset.destination] = {state: v("state"), backlog: v("backlog"), error: v("last_error"),
      buttons: [...a.querySelectorAll("button")].map(b => b.textContent.trim())};
  }
  return {cards: out, nav: !!document.querySelector('header nav a[href="/destinations"]')};
})()`

// The pages on a phone (390 × 844) and on a laptop (1280 × 800), in
// Chromium (issue 44): the charts' value and hour labels lie whole inside
// their chart, at least 5 events fit the first screen of the events list,
// no page scrolls sideways, and the navigation leads to a Destinations
// page that shows each destination's state, backlog and last error, with
// Pause, Resume and Retry now for an operator and no button for a viewer.
// The screenshots are kept ($HOOKBOX_SCREENSHOTS, else a temporary
// directory, named in the log).
func TestBrowser_Phone(t *testing.T) {
	exe := needChromium(t)
	dir := screenshotDir(t)
	f := openFixture(t, t.TempDir(), time.Now().UTC(), nil)
	f.fill()
	for i := range 10 { // a list longer than a screen
		if r := f.send(fmt.Sprintf("more-%d", i), "orders/paid", fmt.Sprintf(`{"id": %d}`, 100+i)); r.StatusCode != 200 {
			t.Fatalf("send more-%d: %d", i, r.StatusCode)
		}
	}
	// A busy hour three hours ago: the value axis goes up to 200000, the
	// widest label it has.
	var busy app.Counts
	busy[app.KindReceived] = 123456
	f.db.AddCounts(f.now.Add(-3*time.Hour), busy)
	for _, u := range []string{`{"name": "ann", "role": "operator", "password": "ann-long-password"}`,
		`{"name": "vic", "role": "viewer", "password": "vic-long-password"}`} {
		if code, b := f.postJSON("/api/v1/users", u); code != 201 {
			t.Fatalf("add user: %d %s", code, b)
		}
	}
	ctx := chromium(t, exe)

	login := func(user, pw string) {
		t.Helper()
		if err := chromedp.Run(ctx, chromedp.Navigate(f.base+"/login"), chromedp.WaitVisible(`input[name="password"]`),
			chromedp.SendKeys(`input[name="user"]`, user), chromedp.SendKeys(`input[name="password"]`, pw),
			chromedp.Submit(`form.login`), chromedp.WaitVisible(`#overview`)); err != nil {
			t.Fatalf("log in as %s: %v", user, err)
		}
	}
	logout := func() {
		t.Helper()
		if err := chromedp.Run(ctx, chromedp.Click(`.logout button`), chromedp.WaitVisible(`input[name="password"]`)); err != nil {
			t.Fatalf("log out: %v", err)
		}
	}
	var width, height int64
	shot := func(name string) {
		t.Helper()
		file := filepath.Join(dir, fmt.Sprintf("phone-%s-%d.png", name, width))
		if m := shoot(t, ctx, file); m.Scroll > m.Client {
			t.Errorf("%s at %d px scrolls sideways: scrollWidth %d > clientWidth %d; past the edge: %q (%s)", name, width, m.Scroll, m.Client, m.Culprits, file)
		}
	}
	open := func(path, wait string) {
		t.Helper()
		if err := chromedp.Run(ctx, chromedp.Navigate(f.base+path), chromedp.WaitVisible(wait)); err != nil {
			t.Fatalf("%s at %d px: %v", path, width, err)
		}
	}

	for _, size := range [][2]int64{{390, 844}, {1280, 800}} {
		width, height = size[0], size[1]
		if err := chromedp.Run(ctx, chromedp.EmulateViewport(width, height)); err != nil {
			t.Fatal(err)
		}
		login("ops", "pw-1234")

		// The charts: every label whole.
		var labels struct {
			Measured int      `json:"measured"`
			Cut      []string `json:"cut"`
		}
		if err := chromedp.Run(ctx, chromedp.Evaluate(chartLabelsJS, &labels)); err != nil {
			t.Fatal(err)
		}
		shot("overview")
		var chartPNG []byte
		if err := chromedp.Run(ctx, chromedp.Screenshot("figure.chart", &chartPNG, chromedp.ByQuery)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("phone-chart-%d.png", width)), chartPNG, 0o644); err != nil {
			t.Fatal(err)
		}
		if labels.Measured < 20 || len(labels.Cut) > 0 {
			t.Errorf("at %d px, of the charts' %d labels these are cut: %s", width, labels.Measured, strings.Join(labels.Cut, "; "))
		}
		t.Logf("at %d px: %d chart labels measured, %d cut", width, labels.Measured, len(labels.Cut))

		// The events list: 5 events or more on the first screen.
		open("/events", "table.events")
		var seen struct{ Rows, Seen, Tall, First int }
		if err := chromedp.Run(ctx, chromedp.Evaluate(eventsSeenJS, &seen)); err != nil {
			t.Fatal(err)
		}
		shot("events")
		if seen.Seen < 5 {
			t.Errorf("at %d×%d the first screen of the events list shows %d events whole (of %d; a row is %d px tall, the first starts at %d px); want 5 or more",
				width, height, seen.Seen, seen.Rows, seen.Tall, seen.First)
		}
		t.Logf("at %d×%d: %d events on the first screen, a row %d px tall, the first at %d px", width, height, seen.Seen, seen.Tall, seen.First)

		// Every other page: nothing past the right edge.
		for _, p := range []struct{ path, wait string }{{"/dead-letters", "main table"}, {"/config", "main table"},
			{"/team", "#users"}, {"/audit", "#audit"}, {"/events/1", "pre.body"}} {
			open(p.path, p.wait)
			shot(strings.ReplaceAll(strings.Trim(p.path, "/"), "/", "-"))
		}

		// The Destinations page, from the navigation, as the admin.
		open("/", "#overview")
		var nav bool
		if err := chromedp.Run(ctx, chromedp.Evaluate(`!!document.querySelector('header nav a[href="/destinations"]')`, &nav)); err != nil || !nav {
			t.Fatalf("at %d px, the navigation has no Destinations page (%v)", width, err)
		}
		if err := chromedp.Run(ctx, chromedp.Click(`header nav a[href="/destinations"]`), chromedp.WaitVisible(`article.dest`)); err != nil {
			t.Fatalf("at %d px, the navigation has no Destinations page: %v", width, err)
		}
		shot("destinations-admin")
		logout()

		// An operator pauses and resumes from it; a viewer sees no button.
		login("ann", "ann-long-password")
		open("/destinations", "article.dest")
		cards := readCards(t, ctx)
		checkCards(t, f, cards, width, true)
		if err := chromedp.Run(ctx,
			chromedp.SendKeys(`article[data-destination="pos"] input[name="reason"]`, "till swap"),
			chromedp.Click(`article[data-destination="pos"] form.pause button`),
			chromedp.WaitVisible(`article[data-destination="pos"] form.resume button`)); err != nil {
			t.Fatalf("at %d px, pause pos: %v", width, err)
		}
		shot("destinations-operator-paused")
		if c := readCards(t, ctx)["pos"]; c.State != app.DestPaused {
			t.Errorf("at %d px, after Pause pos reads %q, want %q", width, c.State, app.DestPaused)
		}
		if err := chromedp.Run(ctx, chromedp.Click(`article[data-destination="pos"] form.resume button`),
			chromedp.WaitVisible(`article[data-destination="pos"] form.pause button`)); err != nil {
			t.Fatalf("at %d px, resume pos: %v", width, err)
		}
		logout()
		login("vic", "vic-long-password")
		open("/destinations", "article.dest")
		shot("destinations-viewer")
		checkCards(t, f, readCards(t, ctx), width, false)
		logout()
	}
	t.Logf("screenshots in %s", dir)
}

// card is a destination's card as the browser shows it.
type card struct {
	State, Backlog, Error string
	Buttons               []string
}

func readCards(t *testing.T, ctx context.Context) map[string]card {
	t.Helper()
	var got struct {
		Cards map[string]card `json:"cards"`
		Nav   bool            `json:"nav"`
	}
	if err := chromedp.Run(ctx, chromedp.Evaluate(destCardsJS, &got)); err != nil {
		t.Fatal(err)
	}
	if !got.Nav {
		t.Error("the navigation has no link to the Destinations page")
	}
	return got.Cards
}

// checkCards compares the cards with GET /api/v1/destinations (every
// destination, its backlog as "waiting", its state word) and the buttons with
// the role: an operator may pause or resume each, a viewer nothing.
func checkCards(t *testing.T, f *fixture, cards map[string]card, width int64, operator bool) {
	t.Helper()
	status, body := f.get("/api/v1/destinations")
	if status != 200 {
		t.Fatalf("/api/v1/destinations: %d %s", status, body)
	}
	var api struct {
		Destinations []struct {
			Name    string `json:"name"`
			State   string `json:"state"`
			Waiting int    `json:"waiting"`
		} `json:"destinations"`
	}
	if err := json.Unmarshal(body, &api); err != nil {
		t.Fatal(err)
	}
	if len(cards) != len(api.Destinations) {
		t.Errorf("at %d px, %d cards for %d destinations: %v", width, len(cards), len(api.Destinations), cards)
	}
	for _, d := range api.Destinations {
		c, ok := cards[d.Name]
		if !ok {
			t.Errorf("at %d px, no card for %s", width, d.Name)
			continue
		}
		if c.Backlog != fmt.Sprint(d.Waiting) {
			t.Errorf("at %d px, %s: backlog %q, the API says waiting %d", width, d.Name, c.Backlog, d.Waiting)
		}
		want := map[string]string{"pos": app.DestDelivering, "erp-warehouse-integration": app.DestFailing, "crm": app.DestFailing}[d.Name]
		if c.State != want || d.State != want {
			t.Errorf("at %d px, %s reads %q, the API says %q, want %q", width, d.Name, c.State, d.State, want)
		}
		if !operator {
			if len(c.Buttons) > 0 {
				t.Errorf("at %d px, a viewer sees buttons on %s: %q", width, d.Name, c.Buttons)
			}
			continue
		}
		if !strings.Contains(strings.Join(c.Buttons, " "), "Pause") {
			t.Errorf("at %d px, an operator has no Pause on %s: %q", width, d.Name, c.Buttons)
		}
	}
	if c := cards["crm"]; c.Error == "" || c.Error == "—" {
		t.Errorf("at %d px, crm shows no last error", width)
	}
}
