package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The events list says failing for an event whose delivery failed and
// waits for a retry, and names the destinations of each event; a merged
// event's page links to the event whose delivery carries it.
func TestPages_EventsFailingAndMerged(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	events := f.fill()
	_, page := f.get("/events")
	// order-2: delivered to pos, failed once to erp and to crm (both
	// waiting for a retry): failing, not a plain pending.
	row := between(t, string(page), ">order-2</a>", "</tr>")
	for _, want := range []string{`<td data-label="to">pos, erp-warehouse-integration, crm</td>`, `>failing</span>`} {
		if !strings.Contains(row, want) {
			t.Errorf("order-2's row lacks %s:\n%s", want, row)
		}
	}
	if strings.Contains(row, ">pending<") {
		t.Errorf("order-2 reads pending:\n%s", row)
	}
	// Its page says so too, for the delivery that failed.
	_, ev := f.get(fmt.Sprintf("/events/%d", events[2]))
	if !strings.Contains(string(ev), `erp-warehouse-integration — <span class="status failing"`) {
		t.Errorf("order-2's page does not say failing for erp")
	}
	// cust-0 and cust-1 were merged into cust-2's open window.
	ctx := context.Background()
	_, c0, _, _ := f.db.LookupID(ctx, "shop", "cust-0")
	_, c2, _, _ := f.db.LookupID(ctx, "shop", "cust-2")
	if row := between(t, string(page), ">cust-0</a>", "</tr>"); !strings.Contains(row, fmt.Sprintf(`merged into <a href="/events/%d">cust-2</a>`, c2)) {
		t.Errorf("cust-0's row does not link to cust-2:\n%s", row)
	}
	_, merged := f.get(fmt.Sprintf("/events/%d", c0))
	if want := fmt.Sprintf(`the delivery of the later event <a href="/events/%d">cust-2</a>`, c2); !strings.Contains(string(merged), want) {
		t.Errorf("cust-0's page lacks %s:\n%s", want, between(t, string(merged), "<h2>Deliveries</h2>", "<h2>Headers</h2>"))
	}
	if strings.Contains(string(merged), "or it was merged") {
		t.Error("cust-0's page still guesses unrouted or merged")
	}
}

// The login page says where the password comes from and how to set
// another; the config page shows the whole URL to paste, as check does.
func TestPages_LoginHintAndPasteURL(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC(), nil)
	resp, err := http.Get(f.base + "/login")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"journalctl -u hookbox | grep generated", "<code>[status] password</code>", "hookbox passwd admin"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("login page lacks %q", want)
		}
	}
	_, cfg := f.get("/config")
	if !strings.Contains(string(cfg), `<code class="paste">http://127.0.0.1:8080/in/shop</code>`) {
		t.Errorf("config page lacks the full URL of shop:\n%s", between(t, string(cfg), "<h2>Sources</h2>", "</table>"))
	}
	g := openFixtureWith(t, t.TempDir(), time.Now().UTC(), nil, "[server]\npublic_url = \"https://hooks.example.com\"\n")
	_, cfg = g.get("/config")
	if !strings.Contains(string(cfg), `<code class="paste">https://hooks.example.com/in/shop</code>`) || strings.Contains(string(cfg), "no-public-url") {
		t.Errorf("config page with public_url:\n%s", between(t, string(cfg), "<h2>Sources</h2>", "<h2>Destinations</h2>"))
	}
}
