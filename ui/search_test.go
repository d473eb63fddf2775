package ui

import (
	"testing"
	"time"
)

func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "1 second", 40 * time.Second: "40 seconds", 90 * time.Second: "1 minute", 59 * time.Minute: "59 minutes",
		2 * time.Hour: "2 hours", 25 * time.Hour: "1 day", 3*24*time.Hour + 5*time.Hour: "3 days",
	} {
		if got := span(d); got != want {
			t.Errorf("span(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 200000: "200,000", 1234567: "1,234,567", -4500: "-4,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
