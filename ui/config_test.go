package ui_test

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
	"hookbox/ui"
)

// configPage is the config page for cfg, over a real bbolt store.
func configPage(t *testing.T, cfg *app.Config) string {
	t.Helper()
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a := fiber.New()
	ui.New(ui.Deps{Config: cfg, Store: db}).Mount(func(method, path string, h fiber.Handler) { a.Add(method, path, h) })
	resp, err := a.Test(httptest.NewRequest("GET", "/config", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /config: %d\n%s", resp.StatusCode, b)
	}
	return string(b)
}

// The config page shows each route's filter, transform and order key, as
// configured and escaped.
func TestConfigPage_Rules(t *testing.T) {
	cfg, err := config.Parse("c.toml", `[[source]]
name = "shop"
provider = "shopify"
secret = "x"
[[destination]]
name = "erp"
url = "https://erp.example.com"
[[route]]
name = "paid"
source = "shop"
to = ["erp"]
filter = 'body.note != "<script>alert(1)</script>" && double(body.total_price) >= 100.0'
transform = '{"text": "Order " + string(body.id)}'
order_key = "{body.customer.id}"
[[route]]
name = "plain"
source = "shop"
to = ["erp"]
`, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	page := configPage(t, cfg)
	for _, want := range []string{
		`<td data-label="filter"><code>body.note != &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34; &amp;&amp; double(body.total_price) &gt;= 100.0</code></td>`,
		`<td data-label="transform"><code>{&#34;text&#34;: &#34;Order &#34; &#43; string(body.id)}</code></td>`,
		`<td data-label="order key"><code>{body.customer.id}</code></td>`,
		`<td data-label="name">plain</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(page, "<script>alert") {
		t.Error("an expression reached the page unescaped")
	}
	if strings.Count(page, `<td data-label="filter"></td>`) != 1 {
		t.Error("the route without rules does not show empty rule cells")
	}
}

// A command destination shows its program and how many arguments it has,
// and the names of its env, never an argument or a value.
func TestConfigPage_Command(t *testing.T) {
	cfg, err := config.Parse("c.toml", `[[destination]]
name = "orders-script"
command = ["/bin/sh", "--token=ARG-SECRET", "b"]
env = ["API_TOKEN=ENV-SECRET", "MODE"]
`, func(k string) (string, bool) { return "OWN-SECRET", k == "MODE" })
	if err != nil {
		t.Fatal(err)
	}
	page := configPage(t, cfg)
	if want := `command <code>/bin/sh</code> <small>(2 arguments, not shown; env API_TOKEN, MODE)</small>`; !strings.Contains(page, want) {
		t.Errorf("the page lacks %s:\n%s", want, page)
	}
	for _, secret := range []string{"ARG-SECRET", "ENV-SECRET", "OWN-SECRET"} {
		if strings.Contains(page, secret) {
			t.Errorf("the page shows %s", secret)
		}
	}
}
