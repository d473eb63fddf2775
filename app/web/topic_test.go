package web_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
)

// sendStripe posts a Stripe event signed for stripe-payments-europe.
func (f *fixture) sendStripe(body string) int {
	f.t.Helper()
	h, err := provider.Sign("stripe", provider.Settings{Secrets: [][]byte{[]byte("whsec_unused")}}, []byte(body), "", "", "", time.Now())
	if err != nil {
		f.t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", f.base+"/in/stripe-payments-europe", strings.NewReader(body))
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// A topic is bounded like an event id: providers that read it from the
// body (Stripe's type, Paddle's event_type…) would otherwise let a
// sender's 1 MB string into every row of the events list and its API
// (500 rows a page), issue 24.
func TestReceive_TopicBounded(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	long := strings.Repeat("t", 900<<10)
	for i := range 20 {
		f.sendStripe(fmt.Sprintf(`{"id":"evt_long_%d","type":%q}`, i, long))
	}
	_, page := f.get("/events")
	_, list := f.get("/api/v1/events?limit=500")
	t.Logf("20 events with a topic of %d bytes: events page %d bytes, /api/v1/events %d bytes", len(long), len(page), len(list))
	if len(page) > 2<<20 || len(list) > 2<<20 {
		t.Errorf("events page %d bytes, API list %d bytes; want each under 2 MiB", len(page), len(list))
	}
	if code := f.sendStripe(fmt.Sprintf(`{"id":"evt_over","type":%q}`, strings.Repeat("t", app.MaxTopicLen+1))); code != 400 {
		t.Errorf("topic of %d bytes: %d; want 400", app.MaxTopicLen+1, code)
	}
	if code := f.sendStripe(fmt.Sprintf(`{"id":"evt_at","type":%q}`, strings.Repeat("t", app.MaxTopicLen))); code != 200 {
		t.Errorf("topic of %d bytes: %d; want 200", app.MaxTopicLen, code)
	}
}
