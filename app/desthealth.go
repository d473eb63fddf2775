// Destination health: what is known of a destination's answers, stored
// so that the page, the API and the alerts tell the same after a restart
// and on every node of a cluster; and the rules of a failing episode, as
// pure functions the stores and the alerter share.

package app

import (
	"time"
)

// DestinationHealth is the stored health of one destination. An episode
// runs from its first failed attempt after a success to its next success.
type DestinationHealth struct {
	// FailingSince is the first failed attempt of the episode (zero: its
	// last attempt worked, or it was never tried).
	FailingSince time.Time
	// LastError is what its last failed attempt of the episode said.
	LastError string
	// NextTry is when it is tried next while it fails: a retry that falls
	// due or a probe (zero: not known).
	NextTry time.Time
	// RecoveredAt is when its last episode ended (zero: none did).
	RecoveredAt time.Time
	// Alerted is the FailingSince of the episode whose destination_failing
	// alert went out, until its destination_recovered alert went out
	// (zero: no alert is owed its recovery).
	Alerted time.Time
}

// AsStored is h at the precision every store keeps (microseconds, as
// PostgreSQL's timestamptz): what one node shows before a restart is what
// it and the others read back after it.
func (h DestinationHealth) AsStored() DestinationHealth {
	h.FailingSince = h.FailingSince.Truncate(time.Microsecond)
	h.NextTry = h.NextTry.Truncate(time.Microsecond)
	h.RecoveredAt = h.RecoveredAt.Truncate(time.Microsecond)
	h.Alerted = h.Alerted.Truncate(time.Microsecond)
	return h
}

// MergeHealth returns the stored health old with a node's view merged in:
// a success ends the episode (RecoveredAt moves on); a failure keeps the
// earliest FailingSince any node saw since the last success, and the
// view's last error and next try. A view whose failures began before a
// success stored since (another node's, which its node has not read yet)
// is stale and changes nothing: that node adopts the success at its next
// read of the store, and its next failure starts a new episode. Alerted
// is old's.
func MergeHealth(old, view DestinationHealth) DestinationHealth {
	out := old
	if view.FailingSince.IsZero() {
		if !old.FailingSince.IsZero() || view.RecoveredAt.After(old.RecoveredAt) {
			out.RecoveredAt = later(old.RecoveredAt, view.RecoveredAt)
		}
		out.FailingSince, out.NextTry, out.LastError = time.Time{}, time.Time{}, ""
		return out
	}
	if view.FailingSince.Before(old.RecoveredAt) {
		return old
	}
	since := view.FailingSince
	if !old.FailingSince.IsZero() && old.FailingSince.Before(since) {
		since = old.FailingSince
	}
	out.FailingSince, out.LastError, out.NextTry = since, view.LastError, view.NextTry
	return out
}

// DestinationAlert returns the alert a destination's stored health calls
// for at now ("" for none): destination_recovered once its episode whose
// failing alert went out has ended (it is owed whatever failingFor is
// now), else destination_failing once the episode has lasted failingFor
// (0: never) and its alert has not gone out. Each goes out once per
// episode: the sender marks Alerted, which this reads.
func DestinationAlert(h DestinationHealth, now time.Time, failingFor time.Duration) string {
	switch {
	case !h.Alerted.IsZero() && !h.Alerted.Equal(h.FailingSince):
		return AlertDestinationRecovered
	case failingFor > 0 && !h.FailingSince.IsZero() && h.Alerted.IsZero() && now.Sub(h.FailingSince) >= failingFor:
		return AlertDestinationFailing
	}
	return ""
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
