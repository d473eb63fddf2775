package app

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// FilterNote is what a route's filter did to an event it turned away: Err
// is its error ("" when it said no).
type FilterNote struct {
	Route string
	Err   string
}

// MaxUnroutedLen bounds Event.Unrouted: enough for a few routes' reasons.
const MaxUnroutedLen = 512

// UnroutedReason says which filters turned an event away, as its page
// shows it: `route "erp-paid": filter false; route "slack": filter error:
// no such key: amount`, cut to MaxUnroutedLen bytes of valid UTF-8 with
// no control characters (an error may quote the body).
func UnroutedReason(notes []FilterNote) string {
	var b strings.Builder
	for i, n := range notes {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString("route " + strconv.Quote(n.Route) + ": filter ")
		if n.Err == "" {
			b.WriteString("false")
		} else {
			b.WriteString("error: " + n.Err)
		}
		if b.Len() > 4*MaxUnroutedLen {
			break
		}
	}
	s := strings.Map(func(c rune) rune {
		if c < 0x20 || c == 0x7f {
			return ' '
		}
		return c
	}, strings.ToValidUTF8(b.String(), "\uFFFD"))
	if len(s) <= MaxUnroutedLen {
		return s
	}
	n := MaxUnroutedLen - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
