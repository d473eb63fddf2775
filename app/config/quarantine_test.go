package config_test

import (
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
)

// [quarantine] has its defaults (1,000 requests, 16 MiB, 7 days per
// source), takes its keys, and a source's quiet_after is read.
func TestParseConfig_Quarantine(t *testing.T) {
	set := map[string]string{"STRIPE_SECRET": "whsec_x"}
	cfg, err := config.Parse("c.toml", stripeSource, env(set))
	if err != nil {
		t.Fatal(err)
	}
	want := app.QuarantineLimits{Requests: 1000, Bytes: 16 << 20, Keep: 7 * 24 * time.Hour}
	if cfg.Quarantine != want || cfg.Sources[0].QuietAfter != 0 {
		t.Errorf("defaults = %+v, quiet_after %s; want %+v, none", cfg.Quarantine, cfg.Sources[0].QuietAfter, want)
	}
	cfg, err = config.Parse("c.toml", "[quarantine]\nmax_requests = 50\nmax_bytes = 65536\nkeep = \"24h\"\n"+stripeSource+"quiet_after = \"6h\"\n", env(set))
	if err != nil {
		t.Fatal(err)
	}
	want = app.QuarantineLimits{Requests: 50, Bytes: 65536, Keep: 24 * time.Hour}
	if cfg.Quarantine != want || cfg.Sources[0].QuietAfter != 6*time.Hour {
		t.Errorf("set = %+v, quiet_after %s; want %+v, 6h", cfg.Quarantine, cfg.Sources[0].QuietAfter, want)
	}
	_, err = config.Parse("c.toml", "[quarantine]\nmax_requests = -1\nmax_bytes = 10\nkeep = \"soon\"\n"+stripeSource+"quiet_after = \"10s\"\n", env(set))
	for _, w := range []string{"quarantine.max_requests: must be 0", "quarantine.max_bytes: 10 is too small", "quarantine.keep:", "quiet_after: 10s is shorter than a minute"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v; want it to say %q", err, w)
		}
	}
}
