// A quiet source: quiet_after on a source sends source_quiet when it has
// accepted nothing for that long, and source_active when events come
// again, once per episode. The rule is here; the alerter (app/alert)
// reads the store and keeps the mark.

package app

import "time"

// QuietMark is what is kept per source of its quiet episodes: Since, the
// time the last one began (the last event accepted before it, or when the
// watch began for a source that never accepted one), and Quiet, whether
// its source_quiet went out without a source_active after it.
type QuietMark struct {
	Since time.Time `json:"since"`
	Quiet bool      `json:"quiet"`
}

// SourceQuietMeta is the MetaStore name of source's QuietMark.
func SourceQuietMeta(source string) string { return "source_quiet/" + source }

// SourceQuietAlert decides the quiet alert of a source whose last
// accepted event is last (zero: none; watched is then when the watch
// began), with mark m kept, at now, for quiet_after after: the kind to
// send ("" none) and the mark to keep once it went out. An episode alerts
// once: source_quiet when nothing came for after since last, unless that
// episode was told already; source_active when an event came after a
// source_quiet.
func SourceQuietAlert(last, watched time.Time, m QuietMark, now time.Time, after time.Duration) (string, QuietMark) {
	if after <= 0 {
		return "", m
	}
	if last.IsZero() {
		last = watched
		if !m.Since.IsZero() {
			last = m.Since // never accepted one: the episode told before a restart
		}
	}
	switch {
	case m.Quiet && last.After(m.Since):
		return AlertSourceActive, QuietMark{Since: m.Since}
	case !m.Quiet && !last.Equal(m.Since) && now.Sub(last) >= after:
		return AlertSourceQuiet, QuietMark{Since: last, Quiet: true}
	}
	return "", m
}
