package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Times on the command line are the machine's local time (time.Local,
// which follows TZ) unless they say their zone: a time typed without one
// ("2026-12-06 14:00") is local, one with Z or an offset is taken as
// given, and every time printed carries its zone ("2026-12-06 14:00 CET").

// localLayouts are the ways to type a time without a zone.
var localLayouts = []string{"2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"}

// printLayout is how the command line prints a time: to the minute, with
// its zone's abbreviation (or its offset, for a zone without one).
const printLayout = "2006-01-02 15:04 MST"

// timeArg reads flag name's value v as the admin API takes it: a
// duration ago (2h, 30m, 3d) as it is, an RFC 3339 time as given, a time
// without a zone in loc, written in RFC 3339 with loc's offset then.
func timeArg(name, v string, loc *time.Location) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" || isAgo(v) {
		return v, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t.Format(time.RFC3339), nil
	}
	for _, layout := range localLayouts {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t.Format(time.RFC3339), nil
		}
	}
	return "", fmt.Errorf("-%s %q: give a time (2026-12-06 14:00, local; 2026-12-06T13:00:00Z or +01:00 as given) or a duration ago (2h, 30m, 3d)", name, v)
}

// isAgo says v is a duration back from now as the admin API reads one.
func isAgo(v string) bool {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		return err == nil && n > 0
	}
	d, err := time.ParseDuration(v)
	return err == nil && d > 0
}

// printTime writes t in loc with its zone; "-" for the zero time.
func printTime(t time.Time, loc *time.Location) string {
	if t.IsZero() {
		return "-"
	}
	return t.In(loc).Format(printLayout)
}
