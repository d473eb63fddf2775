package config

import (
	"fmt"
	"time"

	"hookbox/app"
)

// rawQuarantine is [quarantine]: the bounds of each source's quarantine of
// requests refused for their signature.
type rawQuarantine struct {
	MaxRequests *int   `toml:"max_requests"`
	MaxBytes    *int64 `toml:"max_bytes"`
	Keep        string `toml:"keep"`
}

// quarantine reads [quarantine]; max_requests = 0 keeps nothing.
func (v *validator) quarantine(q *app.QuarantineLimits, r rawQuarantine) {
	q.Requests, q.Bytes = app.DefaultQuarantineRequests, app.DefaultQuarantineBytes
	if r.MaxRequests != nil {
		q.Requests = *r.MaxRequests
		if q.Requests < 0 {
			v.fail("quarantine.max_requests", "must be 0 (keep none) or more")
		}
	}
	if r.MaxBytes != nil {
		q.Bytes = *r.MaxBytes
		if q.Bytes < 1024 {
			v.fail("quarantine.max_bytes", fmt.Sprintf("%d is too small: at least 1024 (a tenth of it is what one address may hold)", q.Bytes))
		}
	}
	q.Keep = v.duration("quarantine.keep", r.Keep, app.DefaultQuarantineKeep)
}

// quietAfter reads a source's quiet_after: "" is off.
func (v *validator) quietAfter(key, s string) time.Duration {
	if s == "" {
		return 0
	}
	d := v.duration(key+".quiet_after", s, 0)
	if d > 0 && d < time.Minute {
		v.fail(key+".quiet_after", fmt.Sprintf("%s is shorter than a minute: the check runs once a minute", d))
	}
	return d
}
