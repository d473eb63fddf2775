package web_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// In a browser in New York (Chromium with TZ=America/New_York), the
// events page shows times in New York's zone with the zone, the form's tz
// field carries -300, and "2026-12-06 11:00" typed in Since lists the
// events received from 11:00 in New York (16:00 UTC) on. On the old main
// the typed time was read as UTC and listed the 09:30 event too.
func TestBrowser_EventsSinceInBrowserZone(t *testing.T) {
	exe := needChromium(t)
	start := time.Date(2026, 12, 6, 14, 30, 0, 0, time.UTC) // 09:30 in New York
	f := openFixture(t, t.TempDir(), start, nil)
	if r := f.send("order-early", "orders/create", `{"id": 1}`); r.StatusCode != 200 {
		t.Fatalf("send: %d", r.StatusCode)
	}
	f.advance(2 * time.Hour) // 11:30 in New York
	if r := f.send("order-late", "orders/create", `{"id": 2}`); r.StatusCode != 200 {
		t.Fatalf("send: %d", r.StatusCode)
	}
	ctx := chromium(t, exe, "TZ=America/New_York")
	var tz, note string
	var received []string
	if err := chromedp.Run(ctx, chromedp.Navigate(f.base+"/events"), chromedp.WaitVisible(`input[name="password"]`),
		chromedp.SendKeys(`input[name="user"]`, "ops"), chromedp.SendKeys(`input[name="password"]`, "pw-1234"),
		chromedp.Submit(`form.login`), chromedp.WaitVisible(`form.filters`),
		chromedp.Value(`form.filters input[name="tz"]`, &tz, chromedp.ByQuery),
		chromedp.Text(`form.filters [data-zone]`, &note, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('td[data-label="received"] time')].map(e => e.textContent)`, &received)); err != nil {
		t.Fatal(err)
	}
	if tz != "-300" || !strings.Contains(note, "your time") {
		t.Errorf("in New York the form's tz is %q and its note %q; want -300 and \"your time, …\"", tz, note)
	}
	slices.Sort(received)
	if want := []string{"2026-12-06 09:30:00 EST", "2026-12-06 11:30:00 EST"}; !slices.Equal(received, want) {
		t.Errorf("received times shown %q; want %q", received, want)
	}
	var ids []string
	if err := chromedp.Run(ctx, chromedp.SendKeys(`form.filters input[name="since"]`, "2026-12-06 11:00", chromedp.ByQuery),
		chromedp.Submit(`form.filters`, chromedp.ByQuery), chromedp.WaitVisible(`form.filters input[name="since"][value="2026-12-06 11:00"]`, chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll('td[data-label="event id"] a')].map(e => e.textContent)`, &ids)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"order-late"}) {
		t.Errorf("since 2026-12-06 11:00 typed in New York lists %v; want [order-late]", ids)
	}
}
