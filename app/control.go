// Destination controls: what an operator (pause, resume) and the
// destination itself (a Retry-After on 429 or 503) say about when a
// destination may be sent to, kept in the store so that they survive a
// restart and hold on every node of a cluster; and the pace of a
// destination's rate.

package app

import (
	"context"
	"fmt"
	"strconv"
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
}

// ControlStore keeps destinations' controls. Every node of a cluster
// reads the same ones.
type ControlStore interface {
	// PauseDestination pauses dest from at, by by for reason, durably; a
	// pause of a paused destination keeps the first one's time and who.
	PauseDestination(ctx context.Context, dest string, at time.Time, by, reason string) error
	// ResumeDestination ends dest's pause, durably; resuming one not
	// paused is no error.
	ResumeDestination(ctx context.Context, dest string) error
	// HoldDestination holds dest until until (a Retry-After), unless it is
	// held until later already.
	HoldDestination(ctx context.Context, dest string, until time.Time) error
	// DestinationControls returns the controls of every destination that
	// has any, by name.
	DestinationControls(ctx context.Context) (map[string]DestinationControl, error)
}

// PausedByCLI is who paused a destination through hookbox pause.
const PausedByCLI = "cli"

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

// Rate is a destination's rate: at most N attempts start per Per, evenly
// spaced (Per/N apart).
type Rate struct {
	N   int
	Per time.Duration
}

// IsZero reports whether r sets no limit.
func (r Rate) IsZero() bool { return r.N == 0 }

// Spacing is the least time between two starts.
func (r Rate) Spacing() time.Duration {
	if r.N == 0 {
		return 0
	}
	return r.Per / time.Duration(r.N)
}

// String is r as the config writes it ("10/s"); "" for none.
func (r Rate) String() string {
	if r.N == 0 {
		return ""
	}
	u := map[time.Duration]string{time.Second: "s", time.Minute: "m", time.Hour: "h"}[r.Per]
	return strconv.Itoa(r.N) + "/" + u
}

// ParseRate parses a destination's rate: N/s, N/m or N/h, N from 1 to
// 1,000,000.
func ParseRate(s string) (Rate, error) {
	n, unit, ok := strings.Cut(strings.TrimSpace(s), "/")
	per := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour}[unit]
	v, err := strconv.Atoi(n)
	if !ok || per == 0 || err != nil {
		return Rate{}, fmt.Errorf("want N/s, N/m or N/h, not %q", s)
	}
	if v < 1 || v > 1_000_000 {
		return Rate{}, fmt.Errorf("N in %q must be between 1 and 1000000", s)
	}
	return Rate{N: v, Per: per}, nil
}

// pacer spaces a lane's starts by its rate; d.mu guards it.
type pacer struct {
	spacing time.Duration
	next    time.Time // the earliest start of the next attempt
}

// paceBurst is how far ahead of its slot a pass may start an attempt, so a
// fast rate (spacing under a millisecond) is not one start per pass: the
// starts of paceBurst's worth go together, never more.
const paceBurst = 10 * time.Millisecond

// allow returns how many of want attempts may start at now (0 means wait
// until the returned time).
func (p *pacer) allow(now time.Time, want int) (int, time.Time) {
	if p.spacing <= 0 {
		return want, time.Time{}
	}
	if p.next.After(now) {
		return 0, p.next
	}
	n := 1 + int(paceBurst/p.spacing)
	return min(n, want), time.Time{}
}

// took moves the next slot on past n starts made at now.
func (p *pacer) took(now time.Time, n int) {
	if p.spacing <= 0 || n == 0 {
		return
	}
	if p.next.Before(now) {
		p.next = now
	}
	p.next = p.next.Add(time.Duration(n) * p.spacing)
}

// RateStore is a store that keeps a destination's rate for a cluster
// (PostgreSQL): the nodes reserve their starts from one shared slot.
type RateStore interface {
	// ReserveStarts reserves n starts to dest spaced by spacing and
	// returns when the first may start and the store's clock now: the
	// caller waits first-now by its own clock.
	ReserveStarts(ctx context.Context, dest string, n int, spacing time.Duration) (first, now time.Time, err error)
}
