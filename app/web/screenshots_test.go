package web_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ScreenshotsEnv names a directory where TestBrowser_Screenshots keeps its
// screenshots (by default they go to a temporary one).
const ScreenshotsEnv = "HOOKBOX_SCREENSHOTS"

// browser finds a Chromium binary, or "".
func browser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// chromium starts a headless Chromium (exe) for the test, with its own
// profile, stopped at the test's end; its context times out in 2 minutes.
func chromium(t *testing.T, exe string, env ...string) context.Context {
	t.Helper()
	profile, err := os.MkdirTemp("", "hookbox-chromium")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(profile) }) // best effort: Chromium may still write it as it exits
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true), chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900), chromedp.Env(env...))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(cancel)
	ctx, cancel = context.WithTimeout(ctx, 120*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// needChromium returns Chromium's path, or skips the test without one
// (fails it on CI, which installs Debian's chromium).
func needChromium(t *testing.T) string {
	t.Helper()
	exe := browser()
	if exe == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium on the CI machine: .ci/run installs Debian's chromium")
		}
		t.Skip("no Chromium here (apt-get install chromium)")
	}
	return exe
}

// overflowJS lists the elements that reach past the viewport's right edge
// (what makes a page scroll sideways), and the page's widths.
const overflowJS = `(() => {
  const w = document.documentElement.clientWidth, out = [];
  for (const el of document.querySelectorAll("body *")) {
    const r = el.getBoundingClientRect();
    if (r.right > w + 0.5 && !el.closest(".scroll")) out.push(el.tagName.toLowerCase() + (el.className ? "." + el.className : "") + " right=" + Math.round(r.right));
    if (out.length >= 5) break;
  }
  return {scroll: document.documentElement.scrollWidth, client: w, culprits: out};
})()`

// overflow is what overflowJS measures of a page.
type overflow struct {
	Scroll   int      `json:"scroll"`
	Client   int      `json:"client"`
	Culprits []string `json:"culprits"`
}

// screenshotDir is where a test keeps its screenshots: $HOOKBOX_SCREENSHOTS
// when set, else a temporary directory.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv(ScreenshotsEnv)
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// shoot writes a full screenshot of the page ctx shows to file, and
// measures what of it reaches past the viewport's right edge.
func shoot(t *testing.T, ctx context.Context, file string) overflow {
	t.Helper()
	var png []byte
	var m overflow
	if err := chromedp.Run(ctx, chromedp.FullScreenshot(&png, 100), chromedp.Evaluate(overflowJS, &m)); err != nil {
		t.Fatalf("%s: %v", filepath.Base(file), err)
	}
	if err := os.WriteFile(file, png, 0o644); err != nil {
		t.Fatal(err)
	}
	return m
}

// Every page of the status site in a real headless Chromium, at 1280 px
// and at a phone's 390 px, against an in-process server over a real bbolt
// store: a screenshot of each (kept in $HOOKBOX_SCREENSHOTS when set), and
// at 390 px no page may scroll sideways (wide tables scroll inside their
// own box instead).
func TestBrowser_Screenshots(t *testing.T) {
	exe := needChromium(t)
	dir := screenshotDir(t)
	f := openFixture(t, t.TempDir(), time.Now().UTC(), nil)
	events := f.fill()
	for path, body := range map[string]string{ // the Team and Audit pages with something on them
		"/api/v1/users":  `{"name": "ann", "role": "operator", "password": "ann-long-password"}`,
		"/api/v1/tokens": `{"name": "ci", "role": "viewer", "expires": "90d"}`,
	} {
		if code, b := f.postJSON(path, body); code != 201 {
			t.Fatalf("%s: %d %s", path, code, b)
		}
	}

	// cust-0 was merged into cust-2's pending delivery by debouncing.
	_, merged, _, err := f.db.LookupID(context.Background(), "shop", "cust-0")
	if err != nil || merged == 0 {
		t.Fatalf("cust-0: %d, %v", merged, err)
	}
	// A browser east of UTC: the pages show its time, UTC on hover.
	ctx := chromium(t, exe, "TZ=Europe/Berlin")

	pages := []struct{ name, path, wait string }{
		{"overview", "/", "#overview"},
		{"events", "/events", "table.events"},
		{"event", fmt.Sprintf("/events/%d", events[0]), "pre.body"},
		{"event-debounced", "/events?topic=customers/*", "table.events"},
		{"merged-event", fmt.Sprintf("/events/%d", merged), "#carried-by"},
		{"dead-letters", "/dead-letters", "main table"},
		{"config", "/config", "main table"},
		{"team", "/team", "#users"},
		{"audit", "/audit", "#audit"},
	}
	for _, width := range []int64{1280, 390} {
		shot := func(name string) {
			t.Helper()
			file := filepath.Join(dir, fmt.Sprintf("%s-%d.png", name, width))
			if m := shoot(t, ctx, file); width == 390 && m.Scroll > m.Client {
				t.Errorf("%s at 390 px scrolls sideways: scrollWidth %d > clientWidth %d; past the edge: %q (%s)", name, m.Scroll, m.Client, m.Culprits, file)
			}
		}
		if err := chromedp.Run(ctx, chromedp.EmulateViewport(width, 844)); err != nil {
			t.Fatal(err)
		}
		if width == 1280 { // logged out first: the login page
			if err := chromedp.Run(ctx, chromedp.Navigate(f.base+"/"), chromedp.WaitVisible(`input[name="password"]`)); err != nil {
				t.Fatal(err)
			}
			shot("login")
			if err := chromedp.Run(ctx,
				chromedp.SendKeys(`input[name="user"]`, "ops"),
				chromedp.SendKeys(`input[name="password"]`, "pw-1234"),
				chromedp.Submit(`form.login`),
				chromedp.WaitVisible(`#overview`)); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range pages {
			if err := chromedp.Run(ctx, chromedp.Navigate(f.base+p.path), chromedp.WaitVisible(p.wait)); err != nil {
				t.Fatalf("%s at %d px: %v", p.name, width, err)
			}
			shot(p.name)
		}
		// The confirmation asked before replaying every dead delivery.
		if err := chromedp.Run(ctx, chromedp.Navigate(f.base+"/dead-letters"), chromedp.WaitVisible("main table"),
			chromedp.Click(`//button[text()="Replay all…"]`), chromedp.WaitVisible(`form.confirm`)); err != nil {
			t.Fatalf("confirm at %d px: %v", width, err)
		}
		shot("confirm")
		if width == 390 { // log out: the login page at 390 px
			if err := chromedp.Run(ctx, chromedp.Navigate(f.base+"/"), chromedp.WaitVisible("#overview"),
				chromedp.Click(`.logout button`), chromedp.WaitVisible(`input[name="password"]`)); err != nil {
				t.Fatalf("log out: %v", err)
			}
			shot("login")
		}
	}
	t.Logf("screenshots in %s", dir)
}
