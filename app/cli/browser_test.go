package cli_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"hookbox/app/apptest"
)

// screenshotsEnv names a directory that keeps the browser test's
// screenshots (as in app/web); without it they go to the test's temp dir,
// so a test run leaves nothing in the tree.
const screenshotsEnv = "HOOKBOX_SCREENSHOTS"

// chromium finds a Chromium binary, or "".
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// The status page in a real headless browser against the real program: log
// in, see the accepted event and its dead delivery, replay it from the dead
// letters, see it delivered.
func TestBrowser_StatusPage(t *testing.T) {
	exe := chromium()
	if exe == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("no Chromium on the CI machine: .ci/run installs Debian's chromium")
		}
		t.Skip("no Chromium here (apt-get install chromium)")
	}
	sink := newLedgerSink(t, 410)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["10ms"]`))
	p := start(t, config)
	body := []byte(`{"order": {"id": 1001, "total": "42.00"}}`)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "order-1001")); r.code != 200 {
		t.Fatalf("post: %d %v", r.code, r.body)
	}
	apptest.Within(10*time.Second, func() bool { return sink.attempts.Load() >= 1 })

	// Chromium may still write its profile while it exits: remove it at the
	// end, best effort, rather than through t.TempDir's strict cleanup.
	profile, err := os.MkdirTemp("", "hookbox-chromium")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(profile)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true), chromedp.UserDataDir(profile), chromedp.WindowSize(1280, 900))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancel = context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	shots := t.TempDir()
	if dir := os.Getenv(screenshotsEnv); dir != "" {
		shots = filepath.Join(dir, "e2e")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := func(name string) chromedp.Action {
		return chromedp.ActionFunc(func(ctx context.Context) error {
			var png []byte
			if err := chromedp.FullScreenshot(&png, 100).Do(ctx); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(shots, name), png, 0o644)
		})
	}
	base := "http://" + p.addr
	var overview, events, detail, deadPage, after string
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(`input[name="password"]`),
		chromedp.SendKeys(`input[name="user"]`, "admin"),
		chromedp.SendKeys(`input[name="password"]`, "pw-e2e"),
		chromedp.Submit(`form.login`),
		chromedp.WaitVisible(`#overview`),
		chromedp.Text(`main`, &overview),
		shot("overview.png"),
		chromedp.Navigate(base+"/events"),
		chromedp.WaitVisible(`table.events`),
		chromedp.Text(`table.events`, &events),
		chromedp.Click(`//a[text()="order-1001"]`),
		chromedp.WaitVisible(`pre.body`),
		chromedp.Text(`main`, &detail),
		shot("event-detail.png"),
		chromedp.Navigate(base+"/dead-letters"),
		chromedp.WaitVisible(`main table`),
		chromedp.Text(`main`, &deadPage),
		chromedp.ActionFunc(func(context.Context) error { sink.code.Store(200); return nil }),
		chromedp.Click(`//button[text()="Replay…"]`),
		chromedp.WaitVisible(`form.confirm`),
		chromedp.Click(`form.confirm button`),
		chromedp.WaitVisible(`p.ok`),
	)
	if err != nil {
		t.Fatalf("browser: %v\n%s", err, p.logText())
	}
	for _, want := range []struct{ page, text, what string }{
		{overview, "dead", "overview"},
		{events, "order-1001", "event list"},
		{detail, "410", "event detail (the attempt's status)"},
		{detail, `"total": "42.00"`, "event detail (the pretty body)"},
		{deadPage, "order-1001", "dead letters"},
	} {
		if !strings.Contains(want.page, want.text) && !strings.Contains(want.page, strings.ReplaceAll(want.text, "order-1001", "#")) {
			t.Errorf("%s lacks %q:\n%s", want.what, want.text, want.page)
		}
	}
	// The replayed delivery goes out; the event page shows it delivered.
	apptest.Within(10*time.Second, func() bool { return len(sink.missing([]string{"order-1001"})) == 0 })
	err = chromedp.Run(ctx,
		chromedp.Navigate(base+"/events?status=delivered"),
		chromedp.WaitVisible(`table.events`),
		chromedp.Text(`table.events`, &after),
		chromedp.Click(`//a[text()="order-1001"]`),
		chromedp.WaitVisible(`.status.delivered`),
		shot("event-delivered.png"),
	)
	if err != nil || !strings.Contains(after, "order-1001") {
		t.Fatalf("after replay: %v\n%s", err, after)
	}
	t.Logf("screenshots in %s", shots)
	p.stop(t)
}
