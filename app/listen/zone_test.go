package listen_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/listen"
)

// listen's lines give their clock in local time with the zone (issue 44):
// under TZ=America/New_York, at 17:00 UTC in January, "12:00:00 EST".
func TestListener_ClockHasItsZone(t *testing.T) {
	if !apptest.UnderZone(t, "America/New_York") {
		return
	}
	stream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		streamHeader(w)
		sseNotice(w, app.StreamNoticeReady, "live")
		<-r.Context().Done()
	}))
	t.Cleanup(stream.Close)
	out := newOutput()
	at := time.Date(2026, 1, 15, 17, 0, 0, 0, time.UTC)
	run(t, &listen.Listener{Remote: stream.URL, Forward: "http://127.0.0.1:1/", Out: out, Now: func() time.Time { return at }})
	out.wait(t, "12:00:00 EST  Ready, forwarding events of "+stream.URL+" to http://127.0.0.1:1/", 1)
}
