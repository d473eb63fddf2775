package sink_test

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"hookbox/app/apptest"
	"hookbox/app/sink"
)

// The sink's line gives its clock in local time with the zone (issue 44):
// under TZ=America/New_York a delivery at 17:00 UTC in January reads
// "12:00:00 EST", and one now ends its clock with EST or EDT.
func TestSink_ClockHasItsZone(t *testing.T) {
	if !apptest.UnderZone(t, "America/New_York") {
		return
	}
	var out lines
	s, err := sink.New("", &out)
	if err != nil {
		t.Fatal(err)
	}
	deliver := func() string {
		before := len(out.String())
		req := httptest.NewRequest("POST", "/hooks", strings.NewReader(`{"a":1}`))
		req.Header.Set("webhook-id", "msg_1")
		req.Header.Set("X-Hookbox-Source", "demo")
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("sink answered %d", w.Code)
		}
		return out.String()[before:]
	}
	s.Now = func() time.Time { return time.Date(2026, 1, 15, 17, 0, 0, 0, time.UTC) }
	if got := deliver(); !strings.HasPrefix(got, "12:00:00 EST msg_1 source=demo ") {
		t.Errorf("at 17:00 UTC the sink printed %q; want it to start 12:00:00 EST", got)
	}
	s.Now = time.Now
	if got := deliver(); !regexp.MustCompile(`^\d\d:\d\d:\d\d E[SD]T msg_1 `).MatchString(got) {
		t.Errorf("now the sink printed %q; want the clock in New York's zone", got)
	}
}
