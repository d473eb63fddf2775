// The two rates a config sets: a destination's Rate spaces the starts of
// its attempts; a route's RateLimit caps the sends per debounce key in a
// sliding window.

package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is a destination's rate: at most N attempts start per Per, evenly
// spaced (Per/N apart).
type Rate struct {
	N   int
	Per time.Duration
}

// IsZero reports whether r sets no limit.
func (r Rate) IsZero() bool { return r.N == 0 }

// Spacing is the least time between two starts.
func (r Rate) Spacing() time.Duration {
	if r.N == 0 {
		return 0
	}
	return r.Per / time.Duration(r.N)
}

// String is r as the config writes it ("10/s"); "" for none.
func (r Rate) String() string {
	if r.N == 0 {
		return ""
	}
	u := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	return strconv.Itoa(r.N) + "/" + u
}

// ParseRate parses a destination's rate: N/s, N/m or N/h, N from 1 to
// 1,000,000.
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	v, err := strconv.Atoi(n)
	if !ok || per == 0 || err != nil {
		return Rate{}, fmt.Errorf("want N/s, N/m or N/h, not %q", s)
	}
	if v < 1 || v > 1_000_000 {
		return Rate{}, fmt.Errorf("the count in %q must be between 1 and 1000000", s)
	}
	return Rate{N: v, Per: per}, nil
}

// RateLimit is a parsed "N/duration" rate limit.
type RateLimit struct {
	N      int
	Window time.Duration
}

// ParseRateLimit parses "5/1m": at most 5 sends per sliding minute.
func ParseRateLimit(s string) (RateLimit, error) {
	n, d, ok := strings.Cut(s, "/")
	if !ok {
		return RateLimit{}, fmt.Errorf("%q: use N/duration, e.g. \"5/1m\"", s)
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 || count > 1_000_000 {
		return RateLimit{}, fmt.Errorf("%q: N must be a whole number from 1", s)
	}
	window, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil || window <= 0 {
		return RateLimit{}, fmt.Errorf("%q: %q is not a positive duration", s, d)
	}
	return RateLimit{N: count, Window: window}, nil
}
