package web_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// The page's Retry now: a button beside each waiting delivery on the event
// page and on a failing destination's row of the overview, posting the
// page's CSRF token; each makes the deliveries due now and says so.
func TestUI_RetryNow(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	f := openFixture(t, t.TempDir(), now, nil)
	events := f.fill()
	c := &client{t: t, base: f.base, jar: map[string]string{}}
	if resp, _ := c.do("POST", "/login", url.Values{"user": {"ops"}, "password": {"pw-1234"}, "next": {"/"}}); resp.StatusCode != 303 {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	ds, _ := f.db.EventDeliveries(context.Background(), events[1])
	var erp, pos *app.Delivery
	for _, d := range ds {
		switch d.Destination {
		case "erp-warehouse-integration":
			erp = d
		case "pos":
			pos = d
		}
	}
	eventPage := fmt.Sprintf("/events/%d", events[1])

	t.Run("EventPage", func(t *testing.T) {
		_, page := c.do("GET", eventPage, nil)
		if !strings.Contains(page, fmt.Sprintf(`action="/deliveries/%d/retry"`, erp.ID)) {
			t.Fatalf("no Retry now beside the waiting delivery %d:\n%s", erp.ID, page)
		}
		if strings.Contains(page, fmt.Sprintf(`action="/deliveries/%d/retry"`, pos.ID)) {
			t.Fatalf("Retry now beside delivered delivery %d", pos.ID)
		}
		action := fmt.Sprintf("/deliveries/%d/retry", erp.ID)
		if resp, _ := c.do("POST", action, url.Values{}); resp.StatusCode != 403 {
			t.Fatalf("Retry now without the CSRF token: %d; want 403", resp.StatusCode)
		}
		resp, _ := c.do("POST", action, url.Values{"csrf": {csrfOf(t, page)}})
		if want := fmt.Sprintf("%s?retried=%d", eventPage, erp.ID); resp.StatusCode != 303 || resp.Header.Get("Location") != want {
			t.Fatalf("Retry now: %d to %q; want 303 to %q", resp.StatusCode, resp.Header.Get("Location"), want)
		}
		if d, _, _ := f.db.Delivery(context.Background(), erp.ID); !d.Due.Equal(now) || d.Attempts != 1 {
			t.Fatalf("after Retry now: %+v; want due %v, its attempt kept", d, now)
		}
		_, page = c.do("GET", resp.Header.Get("Location"), nil)
		if !strings.Contains(page, "Retry now: due now") || strings.Contains(page, fmt.Sprintf(`action="/deliveries/%d/retry"`, erp.ID)) {
			t.Fatalf("the page after Retry now does not say it is due, or still offers it:\n%s", page)
		}
	})
	t.Run("Overview", func(t *testing.T) {
		_, page := c.do("GET", "/", nil)
		if !strings.Contains(page, `action="/destinations/crm/retry"`) {
			t.Fatalf("no Retry now on the failing destination crm's row:\n%s", page)
		}
		if strings.Contains(page, `action="/destinations/pos/retry"`) {
			t.Fatal("Retry now on pos's row, which is ok")
		}
		resp, _ := c.do("POST", "/destinations/crm/retry", url.Values{"csrf": {csrfOf(t, page)}})
		if resp.StatusCode != 303 {
			t.Fatalf("Retry now crm: %d", resp.StatusCode)
		}
		_, page = c.do("GET", resp.Header.Get("Location"), nil)
		if !strings.Contains(page, "1 delivery to crm due now") {
			t.Fatalf("the overview after Retry now does not say how many:\n%s", page)
		}
		if resp, _ := c.do("POST", "/destinations/nowhere/retry", url.Values{"csrf": {csrfOf(t, page)}}); resp.StatusCode != 404 {
			t.Fatalf("Retry now of an unknown destination: %d; want 404", resp.StatusCode)
		}
	})
}
