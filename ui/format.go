package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// human writes a duration as people say it: "1m", "5m", "2h", "1h30m",
// "45s", "250ms", "3d" — at most two units, never "1m0s".
func human(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	}
	units := []struct {
		n    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}}
	var b strings.Builder
	parts := 0
	for i, u := range units {
		if d < u.n && parts == 0 {
			continue
		}
		q := d / u.n
		d -= q * u.n
		if q > 0 {
			fmt.Fprintf(&b, "%d%s", q, u.name)
		}
		parts++
		if parts == 2 || i == len(units)-1 {
			break
		}
	}
	return b.String()
}

// roundAgo rounds a distance in time to what a reader needs: seconds
// under an hour ("1m30s"), minutes under a day ("2h5m"), hours beyond.
func roundAgo(d time.Duration) time.Duration {
	switch {
	case d < time.Hour:
		return d.Round(time.Second)
	case d < 24*time.Hour:
		return d.Round(time.Minute)
	}
	return d.Round(time.Hour)
}

// plural writes n with the noun in the right number: "1 attempt",
// "2 attempts".
func plural(n any, one, many string) string {
	var v int64
	switch x := n.(type) {
	case int:
		v = int64(x)
	case int64:
		v = x
	case uint64:
		v = int64(x)
	case uint32:
		v = int64(x)
	}
	if v == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(v, 10) + " " + many
}

// attemptStatus is an attempt's status column: its HTTP status, or for a
// command how it ended ("exit 75", "killed" by the timeout or a signal),
// "—" when neither is known (no answer came).
func attemptStatus(status int, errText string) string {
	switch {
	case status != 0:
		return strconv.Itoa(status)
	case strings.Contains(errText, "(exit "): // "the command failed (exit 1)"
		_, code, _ := strings.Cut(errText, "(exit ")
		code, _, _ = strings.Cut(code, ")")
		return "exit " + code
	case strings.HasPrefix(errText, "exit status "): // attempts recorded before the words
		code, _, _ := strings.Cut(strings.TrimPrefix(errText, "exit status "), ";")
		return "exit " + code
	case strings.HasPrefix(errText, "the command was killed "), strings.HasPrefix(errText, "killed "):
		return "killed"
	}
	return "—"
}

// outcome writes an attempt's result once: "HTTP 500" when the error is
// only the status, "HTTP 500: <error>" when it says more, the error alone
// without a status.
func outcome(status int, errText string) string {
	code := "HTTP " + strconv.Itoa(status)
	switch {
	case status == 0:
		return errText
	case errText == "" || errText == code:
		return code
	case strings.HasPrefix(errText, code):
		return errText
	}
	return code + ": " + errText
}
