package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
)

// [alerts] failing_for: 10m by default, "0" turns the alert off, anything
// else a duration; a bad one is refused with the file, key and reason.
func TestParseConfig_FailingFor(t *testing.T) {
	for _, tt := range []struct {
		name, value string
		want        time.Duration
		reason      string
	}{
		{"Default", "", app.DefaultFailingFor, ""},
		{"Off", `"0"`, 0, ""},
		{"Seconds", `"5s"`, 5 * time.Second, ""},
		{"Hours", `"1h30m"`, 90 * time.Minute, ""},
		{"NotADuration", `"ten minutes"`, 0, `"ten minutes" is not a duration`},
		{"NoUnit", `"10"`, 0, `"10" is not a duration`},
		{"Negative", `"-1m"`, 0, "must be 0 (off) or more"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			toml := "[alerts]\n"
			if tt.value != "" {
				toml += "failing_for = " + tt.value + "\n"
			}
			cfg, err := config.Parse("hookbox.toml", toml, env(nil))
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got := cfg.Alerts.FailingFor; got != tt.want {
					t.Fatalf("FailingFor = %v; want %v", got, tt.want)
				}
				return
			}
			var ce *app.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("err = %v; want a ConfigError", err)
			}
			if ce.File != "hookbox.toml" || ce.Key != "alerts.failing_for" || !strings.Contains(ce.Reason, tt.reason) {
				t.Fatalf("err = %q (file %q, key %q); want hookbox.toml, alerts.failing_for and a reason with %q", err, ce.File, ce.Key, tt.reason)
			}
		})
	}
}
