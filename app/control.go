// Destination controls: what an operator (pause, resume) and the
// destination itself (a Retry-After on 429 or 503) say about when a
// destination may be sent to, kept in the store so that they survive a
// restart and hold on every node of a cluster. The Pauser that changes
// them is in pauser.go, a destination's rate in rate.go.

package app

import (
	"strings"
	"time"
)

// DestinationControl is the stored state of one destination's controls.
type DestinationControl struct {
	// Paused says nothing is sent to it until it is resumed; PausedAt,
	// PausedBy (a user name, or "cli") and Reason say when, who and why.
	Paused   bool
	PausedAt time.Time
	PausedBy string
	Reason   string
	// HeldUntil is what its last Retry-After asked for: no attempt to it
	// starts before then (zero: none).
	HeldUntil time.Time
	// Health is its stored health (DestinationHealth), read with the
	// controls: what the other nodes of a cluster saw of it.
	Health DestinationHealth
}

// maxPauseReason bounds a pause's reason, which comes from a request.
const maxPauseReason = 500

// CleanPauseReason returns reason as it is stored: trimmed, cut to
// maxPauseReason bytes at a rune boundary, control characters removed.
func CleanPauseReason(reason string) string {
	reason = strings.TrimSpace(reason)
	var b strings.Builder
	for _, r := range reason {
		if r < 0x20 || r == 0x7f {
			continue
		}
		if b.Len()+len(string(r)) > maxPauseReason {
			break
		}
		b.WriteRune(r)
	}
	return b.String()
}
