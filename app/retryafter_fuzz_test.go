package app

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

var retryNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0},
		{"0", 0},
		{"-5", 0},
		{"120", 120 * time.Second},
		{"soon", 0},
		{retryNow.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{retryNow.Add(-time.Hour).Format(http.TimeFormat), 0},
		// Seconds past what a Duration holds wait as long as possible (the
		// dispatcher caps it by the longest step), never a wrapped value.
		{"9223372037", maxRetryAfter},
		{"18446744073709551616", maxRetryAfter},
		{"99999999999999999999999", maxRetryAfter},
	} {
		if got := RetryAfter(tt.v, retryNow); got != tt.want {
			t.Errorf("RetryAfter(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

// FuzzRetryAfter feeds the Retry-After parser what a destination may
// answer: it never panics, never goes negative, and a number of seconds
// means that many seconds.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"", "0", "1", "120", "-1", "+5", " 5", "1.5", "9223372036854775807", "9223372037",
		"Wed, 21 Oct 2015 07:28:00 GMT", "Sun, 29 Nov 2026 12:01:00 GMT", "Sunday, 29-Nov-26 12:01:00 GMT", "Sun Nov 29 12:01:00 2026"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		got := RetryAfter(v, retryNow)
		if got < 0 {
			t.Fatalf("RetryAfter(%q) = %v", v, got)
		}
		if s, err := strconv.ParseInt(v, 10, 64); err == nil && s > 0 && s < int64(maxRetryAfter/time.Second) && got != time.Duration(s)*time.Second {
			t.Fatalf("RetryAfter(%q) = %v, want %ds", v, got, s)
		}
	})
}
