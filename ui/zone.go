package ui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The pages' forms take times as people type them ("2026-12-06 14:00")
// in the browser's time zone: a hidden field, tz, carries the browser's
// offset from UTC in minutes east (-300 in New York in winter, 60 in
// Paris), which the page's script fills in. Without the script the field
// stays empty, the form says its times are UTC, and they are.

// zoneField is the name of the forms' hidden field with the browser's
// offset.
const zoneField = "tz"

// maxOffset bounds an offset in minutes: the zones in use are within
// -12:00 and +14:00.
const maxOffset = 14 * 60

// formZone is the zone of the offset v (minutes east of UTC, as the
// pages' tz field sends it); UTC when v is empty.
func formZone(v string) (*time.Location, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.UTC, nil
	}
	m, err := strconv.Atoi(v)
	if err != nil || m < -maxOffset || m > maxOffset {
		return nil, fmt.Errorf("%s: %q is not an offset from UTC in minutes (-720 to 840)", zoneField, v)
	}
	if m == 0 {
		return time.UTC, nil
	}
	return time.FixedZone(offsetName(m), m*60), nil
}

// offsetName writes an offset in minutes as "+01:00" or "-05:00".
func offsetName(m int) string {
	sign := "+"
	if m < 0 {
		sign, m = "-", -m
	}
	return fmt.Sprintf("%s%02d:%02d", sign, m/60, m%60)
}

// parseWhen reads a time typed in a form: a date, a date and a time
// (with a T or a space) in loc, or an RFC 3339 time with its own offset.
func parseWhen(v string, loc *time.Location) (time.Time, error) {
	v = strings.TrimSpace(v)
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errors.New("bad time")
}

// zoneLabel names loc for a form that has no script to say "your time":
// "UTC", or "UTC-05:00" for the offset the link carried.
func zoneLabel(loc *time.Location) string {
	if loc == time.UTC {
		return "UTC"
	}
	return "UTC" + loc.String()
}
