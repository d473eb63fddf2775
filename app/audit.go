// The audit log: one entry per state change (and per login), kept in the
// store like events, append-only through the API.

package app

import (
	"strings"
	"time"
	"unicode/utf8"
)

// AuditEntry is one recorded action: when, who, from where, what, and
// with what result. Secrets are never in it.
type AuditEntry struct {
	// Seq orders the entries; the store sets it.
	Seq uint64
	At  time.Time
	// Actor is who: a user name, "token:NAME", "local:UNIXUSER" for a
	// command run on the box, or "system".
	Actor string
	// Via is how: "session", "basic", "token", "cli", "signal", or
	// "socket" (the local socket: its peer named by the kernel).
	Via string
	// From is the client's address, or "local".
	From string
	// Action is what (the Audit* constants).
	Action string
	// Target is what it acted on: a delivery id, a destination, a user or
	// token name, a query.
	Target string
	// Detail says more: counts, a role change, a reason.
	Detail string
	// Result is AuditOK, AuditFailed or AuditDenied; Detail says why.
	Result string
}

// Results of an audited action.
const (
	AuditOK     = "ok"
	AuditFailed = "failed"
	AuditDenied = "denied"
)

// AuditQuery selects audit entries, newest first.
type AuditQuery struct {
	// Actor and Action, when set, must match exactly; an Action ending in
	// "." matches every action under it ("user.").
	Actor, Action string
	// Result, when set, must match.
	Result string
	// Since and Until bound At (zero: open).
	Since, Until time.Time
	// Before, when not 0, gives entries with a smaller Seq (the next page).
	Before uint64
	// Limit bounds the entries returned (0: DefaultAuditLimit).
	Limit int
}

// Bounds of an audit query's page.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// Match reports whether e is selected by q's filters (not its page).
func (q AuditQuery) Match(e *AuditEntry) bool {
	switch {
	case q.Actor != "" && e.Actor != q.Actor:
		return false
	case q.Action != "" && e.Action != q.Action && !(strings.HasSuffix(q.Action, ".") && strings.HasPrefix(e.Action, q.Action)):
		return false
	case q.Result != "" && e.Result != q.Result:
		return false
	case !q.Since.IsZero() && e.At.Before(q.Since):
		return false
	case !q.Until.IsZero() && !e.At.Before(q.Until):
		return false
	}
	return true
}

// PageLimit returns the number of entries a page of q holds.
func (q AuditQuery) PageLimit() int {
	switch {
	case q.Limit <= 0:
		return DefaultAuditLimit
	case q.Limit > MaxAuditLimit:
		return MaxAuditLimit
	}
	return q.Limit
}

// maxAuditField bounds each text field of an entry; maxAuditActor its
// actor: "token:" or "local:" and a name.
const (
	maxAuditField = 1000
	maxAuditActor = len("token:") + MaxShownName
)

// CleanAuditEntry returns e as it is stored and shown: every text field
// with control characters made spaces, format characters (bidi overrides
// and isolates among them), separators and bytes that are not UTF-8 made
// U+FFFD (as CleanName does), and cut to maxAuditField bytes (the actor to
// maxAuditActor) at a rune boundary. Entries are cleaned again when read,
// so that one stored by an older hookbox is shown the same way.
func CleanAuditEntry(e AuditEntry) AuditEntry {
	for _, f := range []*string{&e.Actor, &e.Via, &e.From, &e.Action, &e.Target, &e.Detail, &e.Result} {
		max := maxAuditField
		if f == &e.Actor {
			max = maxAuditActor
		}
		*f = cleanText(*f, max)
	}
	return e
}

func cleanText(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < 0x20 || r == 0x7f:
			r = ' '
		case hiddenRune(r):
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > max {
			break
		}
		b.WriteRune(r)
	}
	return strings.TrimSpace(b.String())
}
