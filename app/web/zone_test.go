package web_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// eventIDs lists the event ids the events page at path shows.
func eventIDs(t *testing.T, f *fixture, path string) (int, []string, string) {
	t.Helper()
	code, b := f.get(path)
	var ids []string
	for _, row := range strings.Split(string(b), "<tr>")[1:] {
		if m := eventRowRe.FindStringSubmatch(row); m != nil {
			ids = append(ids, m[2])
		}
	}
	slices.Sort(ids)
	return code, ids, string(b)
}

// A time typed in the events form is the browser's: the form's tz field
// carries its offset (minutes east of UTC, -300 in New York in winter),
// and since, until and the replay they offer read the time in it. Without
// the field (no script) the form says UTC and reads UTC. On the old main
// "2026-12-06 11:00" typed in New York (16:00 UTC) was read as 11:00 UTC
// and listed the event received at 09:30 New York time too.
func TestEvents_SinceInBrowserZone(t *testing.T) {
	start := time.Date(2026, 12, 6, 14, 30, 0, 0, time.UTC) // 09:30 in New York
	f := openFixture(t, t.TempDir(), start, nil)
	if r := f.send("order-early", "orders/create", `{"id": 1}`); r.StatusCode != 200 {
		t.Fatalf("send: %d", r.StatusCode)
	}
	f.advance(2 * time.Hour) // 16:30 UTC, 11:30 in New York
	if r := f.send("order-late", "orders/create", `{"id": 2}`); r.StatusCode != 200 {
		t.Fatalf("send: %d", r.StatusCode)
	}

	form := func(v url.Values) string { return "/events?" + v.Encode() }
	for _, c := range []struct {
		name string
		form url.Values
		want []string
	}{
		{"NewYork", url.Values{"since": {"2026-12-06 11:00"}, "tz": {"-300"}}, []string{"order-late"}},
		{"NewYorkT", url.Values{"since": {"2026-12-06T11:00"}, "tz": {"-300"}}, []string{"order-late"}},
		{"NewYorkUntil", url.Values{"until": {"2026-12-06 11:00"}, "tz": {"-300"}}, []string{"order-early"}},
		{"Paris", url.Values{"since": {"2026-12-06 16:00"}, "tz": {"60"}}, []string{"order-late"}},
		{"UTCWithoutScript", url.Values{"since": {"2026-12-06 11:00"}}, []string{"order-early", "order-late"}},
		{"OffsetGivenWins", url.Values{"since": {"2026-12-06T16:00:00Z"}, "tz": {"-300"}}, []string{"order-late"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, ids, page := eventIDs(t, f, form(c.form))
			if code != 200 || !slices.Equal(ids, c.want) {
				t.Errorf("%s: %d, lists %v, want %v", form(c.form), code, ids, c.want)
			}
			if strings.Contains(page, `class="error"`) {
				t.Errorf("%s: the page refuses it: %s", form(c.form), between(t, page, `class="error"`, "</p>"))
			}
		})
	}

	t.Run("Form", func(t *testing.T) {
		_, _, page := eventIDs(t, f, "/events")
		if !strings.Contains(page, `<input type="hidden" name="tz" value="" data-tz>`) || !strings.Contains(page, `data-zone>times in UTC</small>`) {
			t.Errorf("the form has no tz field for the script, or does not say UTC without it: %s", between(t, page, `<form method="get"`, "</form>"))
		}
		_, _, page = eventIDs(t, f, "/events?since=2026-12-06&tz=-300")
		if !strings.Contains(page, `name="tz" value="-300"`) || !strings.Contains(page, "times in UTC-05:00") {
			t.Errorf("a link with an offset does not keep it, or does not name it: %s", between(t, page, `<form method="get"`, "</form>"))
		}
	})

	t.Run("BadOffset", func(t *testing.T) {
		for _, tz := range []string{"abc", "900", "-1000"} {
			_, _, page := eventIDs(t, f, "/events?since=2026-12-06&tz="+tz)
			if !strings.Contains(page, `class="error"`) || !strings.Contains(between(t, page, `class="error"`, "</p>"), "offset from UTC in minutes") {
				t.Errorf("tz=%s: no error that says what tz is", tz)
			}
		}
	})

	t.Run("Replay", func(t *testing.T) {
		// The replay the filters offer takes the same zone: deliver every
		// delivery, then ask the confirm page how many the form selects.
		late := 0
		for _, id := range []string{"order-early", "order-late"} {
			_, seq, _, _ := f.db.LookupID(t.Context(), "shop", id)
			ds, err := f.db.EventDeliveries(t.Context(), seq)
			if err != nil || len(ds) == 0 {
				t.Fatalf("deliveries of %s: %v, %v", id, ds, err)
			}
			for _, d := range ds {
				if err := f.db.RecordAttempt(t.Context(), d.ID, &app.Attempt{Start: f.now, Status: 200}, app.Delivered, time.Time{}); err != nil {
					t.Fatal(err)
				}
			}
			if id == "order-late" {
				late = len(ds)
			}
		}
		_, _, page := eventIDs(t, f, "/events?since=2026-12-06+11%3A00&tz=-300")
		if !strings.Contains(page, `<input type="hidden" name="tz" value="-300">`) {
			t.Errorf("the replay offer does not carry the offset: %s", between(t, page, `class="replay-offer"`, "</form>"))
		}
		body := url.Values{"since": {"2026-12-06 11:00"}, "tz": {"-300"}}.Encode()
		req, _ := http.NewRequest("POST", f.base+"/replay", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth("ops", "pw-1234")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		if _, err := b.ReadFrom(resp.Body); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("<strong>%d match:", late); resp.StatusCode != 200 || !strings.Contains(b.String(), want) {
			t.Errorf("POST /replay since 11:00 in New York: %d, want %q in %s", resp.StatusCode, want, between(t, b.String(), "<form", "</p>"))
		}
	})
}

// The audit page's since is the browser's time too: half an hour ahead in
// New York (tz -300) lists nothing yet, half an hour back lists the
// pause. On the old main the New York time was read as UTC, five hours
// back, and listed the pause either way.
func TestAudit_SinceInBrowserZone(t *testing.T) {
	f := openFixture(t, t.TempDir(), time.Now().UTC().Truncate(time.Second), nil)
	if code, _ := f.post("/api/v1/destinations/pos/pause"); code != 200 {
		t.Fatalf("pause: %d", code)
	}
	ny := time.FixedZone("-05:00", -5*3600)
	listed := func(at time.Time) bool {
		t.Helper()
		v := url.Values{"since": {at.In(ny).Format("2006-01-02 15:04")}, "tz": {"-300"}}
		code, b := f.get("/audit?" + v.Encode())
		if code != 200 || strings.Contains(string(b), `class="bad"`) {
			t.Fatalf("/audit?%s: %d %s", v.Encode(), code, between(t, string(b), "<h1>", "</table>"))
		}
		return strings.Contains(between(t, string(b), `id="audit"`, "</table>"), app.AuditPause)
	}
	now := time.Now()
	if !listed(now.Add(-30 * time.Minute)) {
		t.Errorf("since half an hour ago in New York does not list the pause")
	}
	if listed(now.Add(30 * time.Minute)) {
		t.Errorf("since half an hour ahead in New York lists the pause: the time was not read in the browser's zone")
	}
}
