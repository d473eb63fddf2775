package web_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// An event waiting in a debounce window says so in the events list, with
// when the window ends, rather than "unrouted"; once the window fired it
// is pending like any other.
func TestEvents_WaitingInDebounceWindow(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Hour).Add(30 * time.Minute)
	f := openFixture(t, t.TempDir(), now, nil)
	f.send("cust-1", "customers/update", `{"id": 42}`)
	status, page := f.get("/events")
	if status != 200 {
		t.Fatalf("events: %d", status)
	}
	row := between(t, string(page), ">cust-1</a>", "</tr>")
	// The time in UTC, which the page's script shows in the browser's zone.
	until := now.Add(time.Minute)
	if want := `waiting (debounce until <time datetime="` + until.Format(time.RFC3339) + `" title="` + until.Format("2006-01-02 15:04:05 UTC") + `">`; !strings.Contains(row, want) {
		t.Errorf("cust-1's row: %s\nwant %q", row, want)
	}
	if strings.Contains(row, "unrouted") {
		t.Errorf("cust-1 shows as unrouted: %s", row)
	}
	if _, body := f.get("/events?status=waiting"); !strings.Contains(string(body), ">cust-1</a>") {
		t.Errorf("the status filter 'waiting' does not find cust-1")
	}
	if _, _, err := f.db.FirePending(context.Background(), now.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	_, page = f.get("/events")
	if row := between(t, string(page), ">cust-1</a>", "</tr>"); !strings.Contains(row, ">pending<") {
		t.Errorf("cust-1's row after its window: %s", row)
	}
}
