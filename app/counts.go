package app

import "time"

// Counts is how many of each Kind happened in one hour.
type Counts [NumKinds]uint64

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	for k := range c {
		c[k] += o[k]
	}
}

// HourCounts are the counts of the hour that starts at Hour (UTC).
type HourCounts struct {
	Hour   time.Time
	Counts Counts
}

// Hour returns the unix hour of t: the key the stores count under.
func Hour(t time.Time) int64 {
	s := t.Unix()
	if s < 0 && s%3600 != 0 {
		return s/3600 - 1
	}
	return s / 3600
}

// HourStart returns the start of unix hour h.
func HourStart(h int64) time.Time { return time.Unix(h*3600, 0).UTC() }

// CountStore keeps the status page's hourly counts durably, so that a
// restart changes nothing on the page. A store counts what its own writes
// do in the same transaction: an accepted event (received and accepted, in
// the hour it was received, and debounced when it merged into a pending
// delivery) and each recorded attempt (delivered, retrying or dead, in the
// hour the attempt ended). What no write carries (requests refused or
// answered as duplicates) comes through AddCounts.
type CountStore interface {
	// AddCounts adds c to the hour of at. The store keeps them in memory
	// and writes them with a later commit (and at Close): a crash may lose
	// the ones not written yet, never a count of an accepted event or of
	// an attempt.
	AddCounts(at time.Time, c Counts)
	// HourlyCounts returns the counts of the hours from the one of from to
	// the one of to, both included, oldest first; hours with nothing
	// counted may be left out. It includes what AddCounts holds.
	HourlyCounts(from, to time.Time) ([]HourCounts, error)
	// PruneCounts forgets the hours that end at or before t, and reports
	// how many it forgot.
	PruneCounts(before time.Time) (int, error)
}
