package apptest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/provider"
)

// AlertSink records the text of every Slack-compatible message posted to
// it: the alert URL of the services' tests.
type AlertSink struct {
	*httptest.Server
	mu    sync.Mutex
	texts []string
}

// NewAlertSink serves an alert URL on 127.0.0.1 until the test ends.
func NewAlertSink(t testing.TB) *AlertSink {
	s := &AlertSink{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		b, _ := io.ReadAll(r.Body)
		json.Unmarshal(b, &m)
		s.mu.Lock()
		s.texts = append(s.texts, m.Text)
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

// Messages returns the texts posted so far, in order.
func (s *AlertSink) Messages() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.texts)
}

// TransformFunc is an app.Transform made of a Go function: what the
// domain's and the dispatcher's tests use in place of a CEL expression
// (app/rules compiles those; the end-to-end tests run them).
type TransformFunc func(in *app.RuleInput, max int) ([]byte, string, error)

func (f TransformFunc) Apply(in *app.RuleInput, max int) ([]byte, string, error) { return f(in, max) }
func (f TransformFunc) String() string                                           { return "test transform" }

// SlackRefund stands for the routing issue's example,
// {"text": "Refund " + string(body.id) + ": " + body.amount + " " + body.currency},
// failing as CEL does on a missing field.
var SlackRefund = TransformFunc(func(in *app.RuleInput, _ int) ([]byte, string, error) {
	var b map[string]any
	if err := json.Unmarshal(in.Body, &b); err != nil {
		return nil, "", err
	}
	for _, k := range []string{"id", "amount", "currency"} {
		if _, ok := b[k]; !ok {
			return nil, "", fmt.Errorf("no such key: %s", k)
		}
	}
	out, err := json.Marshal(map[string]string{"text": fmt.Sprintf("Refund %v: %v %v", b["id"], b["amount"], b["currency"])})
	return out, "application/json", err
})

// Signed builds an inbound request for a source of provider prov, signed
// with secret as the provider signs (hmac sources: X-Signature, "sha256=").
func Signed(t testing.TB, prov, secret string, body []byte, url, id, topic string, at time.Time) *app.Inbound {
	t.Helper()
	h, err := provider.Sign(prov, provider.Settings{Secrets: [][]byte{[]byte(secret)}, SignatureHeader: "X-Signature", SignaturePrefix: "sha256="},
		body, url, id, topic, at)
	if err != nil {
		t.Fatal(err)
	}
	return Inbound(body, h)
}

// Inbound is the request of body with the header h, as the edge hands it
// to the receiver.
func Inbound(body []byte, h http.Header) *app.Inbound {
	in := &app.Inbound{Body: body}
	for k, vs := range h {
		for _, v := range vs {
			in.Header = append(in.Header, app.HeaderField{Name: k, Value: v})
		}
	}
	return in
}
