package app_test

import (
	"net/http"
	"slices"
	"testing"

	"hookbox/app"
)

func TestHeaderEnvName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"X-Shopify-Topic", "HOOKBOX_HEADER_X_SHOPIFY_TOPIC"},
		{"Webhook-Id", "HOOKBOX_HEADER_WEBHOOK_ID"},
		{"x-wc-webhook-id", "HOOKBOX_HEADER_X_WC_WEBHOOK_ID"},
		{"X_Odd.Name~1", "HOOKBOX_HEADER_X_ODD_NAME_1"},
	} {
		if got := app.HeaderEnvName(tt.in); got != tt.want {
			t.Errorf("HeaderEnvName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCommandEnv(t *testing.T) {
	w := app.Work{Delivery: &app.Delivery{ID: 7}, Event: &app.Event{Source: "s", ID: "e", Topic: "t"}}
	h := http.Header{"X-B": {"1", "2"}, "X-A": {"a"}, "X_a": {"shadow"}}
	t.Run("OwnPath", func(t *testing.T) {
		got := app.CommandEnv("", &app.Destination{Name: "d", Env: []string{"A=1"}}, w, 2, h)
		want := []string{"PATH=" + app.DefaultCommandPath, "A=1",
			"HOOKBOX_EVENT_ID=e", "HOOKBOX_SOURCE=s", "HOOKBOX_TOPIC=t", "HOOKBOX_DELIVERY_ID=7", "HOOKBOX_ATTEMPT=2",
			"HOOKBOX_WEBHOOK_ID=" + app.MessageID("s", "e", "d"),
			"HOOKBOX_HEADER_X_A=a", "HOOKBOX_HEADER_X_B=1, 2"}
		if !slices.Equal(got, want) {
			t.Fatalf("env = %q\nwant %q", got, want)
		}
	})
	t.Run("EnvPathWins", func(t *testing.T) {
		got := app.CommandEnv("/usr/bin", &app.Destination{Name: "d", Env: []string{"PATH=/opt/bin"}}, w, 1, nil)
		if got[0] != "PATH=/opt/bin" || slices.Contains(got, "PATH=/usr/bin") {
			t.Fatalf("env = %q, want only the destination's PATH", got)
		}
	})
}
