package app_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/apptest"
)

func TestConfig_RouteTransform(t *testing.T) {
	cfg := &app.Config{Routes: []*app.Route{{Name: "plain"}, {Name: "slack", Transform: apptest.SlackRefund}}}
	for _, tt := range []struct {
		route string
		want  bool
	}{{"", false}, {"plain", false}, {"slack", true}, {"gone", false}} {
		if got := cfg.RouteTransform(tt.route) != nil; got != tt.want {
			t.Errorf("RouteTransform(%q) != nil is %v; want %v", tt.route, got, tt.want)
		}
	}
}

// What ApplyTransform makes of a transform's answer: its body and
// Content-Type, or an error that an attempt records as the reason, with
// the values of secret-looking headers masked, cut when long; a body over
// max, a Content-Type the transport would refuse and a panic are errors.
func TestApplyTransform(t *testing.T) {
	const token = "tok_live_0123456789"
	in := &app.RuleInput{Source: "shop", ID: "e1", Body: []byte(`{"a":1}`),
		Header: []app.HeaderField{{Name: "X-Api-Token", Value: token}, {Name: "X-Plain", Value: "visible-value"}}}
	fixed := func(body, ctype string, err error) app.Transform {
		return apptest.TransformFunc(func(*app.RuleInput, int) ([]byte, string, error) { return []byte(body), ctype, err })
	}
	for _, tt := range []struct {
		name    string
		t       app.Transform
		max     int
		body    string
		wantErr string
	}{
		{"OK", fixed(`{"text":"hi"}`, "application/json", nil), 100, `{"text":"hi"}`, ""},
		{"OKAtMax", fixed("12345", "text/plain", nil), 5, "12345", ""},
		{"NoContentType", fixed("x", "", nil), 5, "x", ""},
		{"Error", fixed("", "", errors.New("no such key: amount")), 100, "", "transform: no such key: amount"},
		{"SecretMasked", fixed("", "", errors.New("cannot convert '"+token+"' nor 'visible-value'")), 100, "",
			"transform: cannot convert '••••' nor 'visible-value'"},
		{"LongErrorCut", fixed("", "", errors.New(strings.Repeat("é", 600))), 100, "", "transform: " + strings.Repeat("é", 256) + "…"},
		{"OverMax", fixed("123456", "text/plain", nil), 5, "", "transform: the body made is 6 bytes, over max_body_bytes (5)"},
		{"DefaultMax", fixed(strings.Repeat("x", app.DefaultMaxBodyBytes+1), "text/plain", nil), 0, "",
			fmt.Sprintf("transform: the body made is %d bytes, over max_body_bytes (%d)", app.DefaultMaxBodyBytes+1, app.DefaultMaxBodyBytes)},
		{"BadContentType", fixed("x", "text/plain\r\nX-Injected: 1", nil), 5, "", "transform: the Content-Type made is not a valid header value"},
		{"Panic", apptest.TransformFunc(func(*app.RuleInput, int) ([]byte, string, error) { panic("engine bug") }), 5, "", "transform: panic: engine bug"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := app.ApplyTransform(tt.t, in, tt.max)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || out != nil {
					t.Fatalf("ApplyTransform = %+v, %v; want the error %q", out, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(out.Body) != tt.body {
				t.Fatalf("ApplyTransform = %+v, %v; want %q", out, err, tt.body)
			}
		})
	}
	if got := app.MaskSecretValues("a "+token+" b "+token, in.Header); got != "a •••• b ••••" {
		t.Errorf("MaskSecretValues = %q", got)
	}
}
