package app_test

import (
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

func TestParseRate(t *testing.T) {
	for _, c := range []struct {
		in      string
		want    app.Rate
		spacing time.Duration
		err     string
	}{
		{"10/s", app.Rate{N: 10, Per: time.Second}, 100 * time.Millisecond, ""},
		{"30/m", app.Rate{N: 30, Per: time.Minute}, 2 * time.Second, ""},
		{"3600/h", app.Rate{N: 3600, Per: time.Hour}, time.Second, ""},
		{" 5/s ", app.Rate{N: 5, Per: time.Second}, 200 * time.Millisecond, ""},
		{"fast", app.Rate{}, 0, "want N/s, N/m or N/h"},
		{"10/d", app.Rate{}, 0, "want N/s, N/m or N/h"},
		{"ten/s", app.Rate{}, 0, "want N/s, N/m or N/h"},
		{"0/s", app.Rate{}, 0, "between 1 and"},
		{"2000000/s", app.Rate{}, 0, "between 1 and"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := app.ParseRate(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("ParseRate(%q) = %v, %v; want an error with %q", c.in, got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want || got.Spacing() != c.spacing || got.String() != c.want.String() {
				t.Fatalf("ParseRate(%q) = %v (spacing %v), %v; want %v (spacing %v)", c.in, got, got.Spacing(), err, c.want, c.spacing)
			}
		})
	}
}

func TestCleanPauseReason(t *testing.T) {
	long := make([]byte, 600)
	for i := range long {
		long[i] = 'a'
	}
	for in, want := range map[string]string{
		"  ERP maintenance\r\n": "ERP maintenance",
		"a\x00b\x1bc":           "abc",
		string(long):            string(long[:500]),
	} {
		if got := app.CleanPauseReason(in); got != want {
			t.Errorf("CleanPauseReason(%q) = %q; want %q", in, got, want)
		}
	}
}
