package dispatch_test

import (
	"net/http"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
)

// What the dispatcher's tests share with the receiver's (app/receive
// keeps its own copy): the clock's start and signed requests.

var now0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// signed builds an inbound request for a source, signed with secret.
func signed(t testing.TB, prov, secret string, body []byte, url, id, topic string, at time.Time) *app.Inbound {
	t.Helper()
	h, err := provider.Sign(prov, provider.Settings{Secrets: [][]byte{[]byte(secret)}, SignatureHeader: "X-Signature", SignaturePrefix: "sha256="},
		body, url, id, topic, at)
	if err != nil {
		t.Fatal(err)
	}
	return inbound(body, h)
}

func inbound(body []byte, h http.Header) *app.Inbound {
	in := &app.Inbound{Body: body}
	for k, vs := range h {
		for _, v := range vs {
			in.Header = append(in.Header, app.HeaderField{Name: k, Value: v})
		}
	}
	return in
}
