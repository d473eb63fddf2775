package ui

import (
	"fmt"
	"strconv"
	"time"

	"hookbox/app"
)

// Body search on the events page (issue 29): a search box beside the
// filters; on bbolt a search stops at its budget, and the page says how
// far it looked with a link that searches further.

// searchWindow is what the events page says of a search that stopped at
// its budget: how far back it looked, how many events it read, and the
// link that goes on from there.
type searchWindow struct {
	// Last is how far back from now the first page looked ("3 days"),
	// "" on a page that went on from a cursor (Until says where it
	// stopped).
	Last     string
	Until    time.Time
	Searched string // "200,000 events"
	Further  string // the URL of the next stretch
}

// newSearchWindow describes res, a search that stopped at its budget
// (nil when it looked at everything); further is the URL that goes on,
// continued that the page itself went on from a cursor.
func newSearchWindow(res app.EventSearch, now time.Time, further string, continued bool) *searchWindow {
	if res.SearchedUntil.IsZero() {
		return nil
	}
	w := &searchWindow{Until: res.SearchedUntil, Further: further,
		Searched: thousands(res.Searched) + " " + map[bool]string{true: "event", false: "events"}[res.Searched == 1]}
	if !continued {
		w.Last = span(now.Sub(res.SearchedUntil))
	}
	return w
}

// span writes a stretch of time as a page says it: "3 days", "5 hours",
// "12 minutes", "40 seconds" (rounded down, at least "1 second").
func span(d time.Duration) string {
	for _, u := range []struct {
		n         time.Duration
		one, many string
	}{{24 * time.Hour, "day", "days"}, {time.Hour, "hour", "hours"}, {time.Minute, "minute", "minutes"}} {
		if d >= u.n {
			return plural(int64(d/u.n), u.one, u.many)
		}
	}
	return plural(max(int64(d/time.Second), 1), "second", "seconds")
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	if n < 0 {
		return "-" + thousands(-n)
	}
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// checkSearch is the page's sentence for a search text it refuses.
func checkSearch(q string) string {
	if len(q) > app.MaxSearch {
		return fmt.Sprintf("search: the text is %d bytes long; give at most %d", len(q), app.MaxSearch)
	}
	if err := app.CheckSearch(q); err != nil {
		return fmt.Sprintf("search: %q is too short: give at least %d characters", q, app.MinSearch)
	}
	return ""
}
