package ui

import (
	"testing"
	"time"
)

func TestHuman(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {250 * time.Millisecond, "250ms"}, {time.Second, "1s"}, {45 * time.Second, "45s"},
		{time.Minute, "1m"}, {5 * time.Minute, "5m"}, {30 * time.Minute, "30m"}, {90 * time.Second, "1m30s"},
		{2 * time.Hour, "2h"}, {8 * time.Hour, "8h"}, {time.Hour + 30*time.Minute, "1h30m"},
		{time.Hour + 5*time.Second, "1h"}, {720 * time.Hour, "30d"}, {26 * time.Hour, "1d2h"}, {-time.Minute, "1m"},
	} {
		if got := human(tc.d); got != tc.want {
			t.Errorf("human(%v) = %q; want %q", tc.d, got, tc.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		n    any
		want string
	}{{0, "0 attempts"}, {1, "1 attempt"}, {2, "2 attempts"}, {uint64(1), "1 attempt"}, {int64(7), "7 attempts"}} {
		if got := plural(tc.n, "attempt", "attempts"); got != tc.want {
			t.Errorf("plural(%v) = %q; want %q", tc.n, got, tc.want)
		}
	}
}

func TestOutcome(t *testing.T) {
	for _, tc := range []struct {
		status int
		err    string
		want   string
	}{
		{500, "HTTP 500", "HTTP 500"}, {500, "", "HTTP 500"}, {0, "connection refused", "connection refused"},
		{502, "read timeout", "HTTP 502: read timeout"}, {503, "HTTP 503 after 10s", "HTTP 503 after 10s"},
	} {
		if got := outcome(tc.status, tc.err); got != tc.want {
			t.Errorf("outcome(%d, %q) = %q; want %q", tc.status, tc.err, got, tc.want)
		}
	}
}

func TestAttemptStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		err    string
		want   string
	}{
		{200, "", "200"}, {503, "HTTP 503", "503"}, {0, "connection refused", "—"}, {0, "", "—"},
		{0, "exit status 75", "exit 75"}, {0, "exit status 65", "exit 65"},
		{0, "killed after the 30s timeout", "killed"}, {0, "killed by signal SIGSEGV", "killed"},
		{0, "the command failed (exit 1)", "exit 1"}, {0, "the command asked for a retry (exit 75)", "exit 75"},
		{0, "dead: the command refused the event (exit 65), not retried", "exit 65"},
		{0, "the command was killed at its 30s timeout", "killed"}, {0, "the command was killed by signal SIGSEGV", "killed"},
	} {
		if got := attemptStatus(tc.status, tc.err); got != tc.want {
			t.Errorf("attemptStatus(%d, %q) = %q; want %q", tc.status, tc.err, got, tc.want)
		}
	}
}

func TestNiceScale(t *testing.T) {
	for n, want := range map[uint64]uint64{0: 1, 1: 1, 2: 2, 3: 5, 7: 10, 10: 10, 11: 20, 180: 200, 4000: 5000} {
		if got := niceScale(n); got != want {
			t.Errorf("niceScale(%d) = %d; want %d", n, got, want)
		}
	}
}

// The value axis writes its top in 4 characters at most, which is what
// fits left of the plot on a phone (issue 44).
func TestShortCount(t *testing.T) {
	for n, want := range map[uint64]string{1: "1", 500: "500", 1000: "1k", 2000: "2k", 50000: "50k", 500000: "500k",
		1000000: "1M", 200000000: "200M", 5000000000: "5G", 10000000000000: "10T"} {
		if got := shortCount(n); got != want {
			t.Errorf("shortCount(%d) = %q; want %q", n, got, want)
		}
	}
	for n := uint64(0); n < 1e15; n = n*3 + 1 {
		if s := shortCount(niceScale(n)); len(s) > 4 {
			t.Errorf("the scale of %d is written %q, over 4 characters", n, s)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{{"short", 10, "short"}, {"exactly", 7, "exactly"}, {"a bit longer", 5, "a bit…"}, {"ééééé", 3, "ééé…"}} {
		if got := cut(tc.in, tc.n); got != tc.want {
			t.Errorf("cut(%q, %d) = %q; want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
