package web_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

var (
	// eventRowRe finds an events-page row's event and the status it shows.
	eventRowRe = regexp.MustCompile(`<a href="/events/(\d+)">([^<]*)</a>.*?<td class="status ([a-z]+)"`)
	// optionRe finds the words the events page offers as status filters.
	optionRe = regexp.MustCompile(`<option\s*(?:selected)?>([a-z]+)</option>`)
	// deliveryWordRe finds the state an event page shows for a delivery.
	deliveryWordRe = regexp.MustCompile(`<h3>[^<]* — <span class="status ([a-z]+)"`)
)

// pageStatuses lists the events page at path: each row's event id by the
// status it shows, and the words the page offers as filters.
func pageStatuses(t *testing.T, f *fixture, path string) (code int, labels map[string][]string, offered []string, page string) {
	t.Helper()
	code, b := f.get(path)
	page = string(b)
	labels = map[string][]string{}
	for _, row := range strings.Split(page, "<tr>")[1:] {
		if m := eventRowRe.FindStringSubmatch(row); m != nil {
			labels[m[3]] = append(labels[m[3]], m[2])
		}
	}
	if sel := strings.Index(page, `<select name="status">`); sel >= 0 {
		end := sel + strings.Index(page[sel:], "</select>")
		for _, m := range optionRe.FindAllStringSubmatch(page[sel:end], -1) {
			offered = append(offered, m[1])
		}
	}
	return code, labels, offered, page
}

// apiStatuses lists /api/v1/events with query: each event id by the status
// it shows.
func apiStatuses(t *testing.T, f *fixture, query string) (int, map[string][]string, string) {
	t.Helper()
	code, b := f.get("/api/v1/events?limit=500&" + query)
	var out struct {
		Items []struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"items"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v: %s", query, err, b)
	}
	got := map[string][]string{}
	for _, it := range out.Items {
		got[it.Status] = append(got[it.Status], it.ID)
	}
	return code, got, out.Error
}

// Every word the events page shows for an event, used as ?status= on the
// API and on the page, lists exactly the events the page labels with it;
// every word an event page shows for a delivery is a filter the API takes;
// an unknown word is a 400 that names the valid ones. On the old main the
// page said "failing" for order-2 while ?status=failing listed nothing,
// ?status=pending listed order-2, and ?status=retrying listed nothing with a
// 200.
func TestEvents_StatusWords(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	seqs := f.fill() // order-0, order-1 dead; order-2 failing; cust-* merged and waiting
	for _, ev := range []struct{ id, topic string }{{"order-new", "orders/create"}, {"order-done", "orders/paid"}, {"product-1", "products/update"}} {
		if r := f.send(ev.id, ev.topic, `{"id": 7}`); r.StatusCode != 200 {
			t.Fatalf("send %s: %d", ev.id, r.StatusCode)
		}
	}
	_, done, _, _ := f.db.LookupID(t.Context(), "shop", "order-done")
	ds, err := f.db.EventDeliveries(t.Context(), done)
	if err != nil || len(ds) != 3 {
		t.Fatalf("deliveries of order-done: %v, %v", ds, err)
	}
	for _, d := range ds {
		if err := f.db.RecordAttempt(t.Context(), d.ID, &app.Attempt{Start: f.now, Status: 200}, app.Delivered, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	_, fresh, _, _ := f.db.LookupID(t.Context(), "shop", "order-new")
	_, product, _, _ := f.db.LookupID(t.Context(), "shop", "product-1")
	seqs = append(seqs, done, fresh, product)

	_, labels, offered, _ := pageStatuses(t, f, "/events")
	for _, w := range []string{"dead", "failing", "pending", "delivered", "merged", "waiting", "unrouted"} {
		if len(labels[w]) == 0 {
			t.Errorf("the fixture shows no event as %s: %v", w, labels)
		}
	}
	for w := range labels {
		if !slices.Contains(offered, w) {
			t.Errorf("the page shows %s but does not offer it as a filter (offers %v)", w, offered)
		}
	}
	_, shown, _ := apiStatuses(t, f, "")
	for _, w := range offered {
		code, got, msg := apiStatuses(t, f, "status="+w)
		if code != 200 || !slices.Equal(got[w], labels[w]) || len(got) > 1 {
			t.Errorf("API ?status=%s: %d %s, lists %v; the page labels %s %v", w, code, msg, got, w, labels[w])
		}
		if !slices.Equal(shown[w], labels[w]) {
			t.Errorf("the API shows %s for %v, the page for %v", w, shown[w], labels[w])
		}
		code, got, _, _ = pageStatuses(t, f, "/events?status="+w)
		if code != 200 || !slices.Equal(got[w], labels[w]) || len(got) > 1 {
			t.Errorf("page ?status=%s: %d, lists %v; the page labels %s %v", w, code, got, w, labels[w])
		}
	}

	// The words the event pages show for deliveries are filters too.
	delivWords := map[string]bool{}
	for _, seq := range seqs {
		_, page := f.get(fmt.Sprintf("/events/%d", seq))
		for _, m := range deliveryWordRe.FindAllStringSubmatch(string(page), -1) {
			delivWords[m[1]] = true
		}
	}
	for _, w := range []string{"dead", "failing", "pending", "delivered"} {
		if !delivWords[w] {
			t.Errorf("no event page shows a delivery as %s (shows %v)", w, delivWords)
		}
	}
	for w := range delivWords {
		if code, _, msg := apiStatuses(t, f, "status="+w); code != 200 || !slices.Contains(offered, w) {
			t.Errorf("a delivery shows %s, but ?status=%s: %d %s, offered: %v", w, w, code, msg, offered)
		}
	}

	for _, bad := range []string{"retrying", "Failing", "any"} {
		code, got, msg := apiStatuses(t, f, "status="+bad)
		if code != 400 || len(got) != 0 {
			t.Errorf("API ?status=%s: %d, lists %v; want 400", bad, code, got)
		}
		pcode, pgot, _, page := pageStatuses(t, f, "/events?status="+bad)
		if pcode != 400 || len(pgot) != 0 {
			t.Errorf("page ?status=%s: %d, lists %v; want 400", bad, pcode, pgot)
		}
		for _, w := range offered {
			if !strings.Contains(msg, w) || !strings.Contains(between(t, page, `class="error"`, "</p>"), w) {
				t.Errorf("?status=%s: the error (%q) does not name %s", bad, msg, w)
			}
		}
	}
}
