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
	"sync/atomic"
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
		return Rate{}, fmt.Errorf("the count in %q must be between 1 and 1000000", s)
	}
	return Rate{N: v, Per: per}, nil
}

// Pauser pauses and resumes destinations for the admin API, the page and
// the CLI: it stores the change, then tells this node's dispatcher (the
// other nodes of a cluster read it within their ControlEvery).
type Pauser struct {
	store ControlStore
	// dests are the names of the config in force (Apply).
	dests   atomic.Pointer[map[string]bool]
	changed func()
	now     func() time.Time
}

// NewPauser returns the Pauser of cfg's destinations over store; changed
// (may be nil) is told after each change, now is the clock.
func NewPauser(cfg *Config, store ControlStore, changed func(), now func() time.Time) *Pauser {
	p := &Pauser{store: store, changed: changed, now: now}
	p.Apply(cfg)
	return p
}

// Apply makes cfg's destinations the ones that can be paused.
func (p *Pauser) Apply(cfg *Config) {
	dests := make(map[string]bool, len(cfg.Destinations))
	for _, d := range cfg.Destinations {
		dests[d.Name] = true
	}
	p.dests.Store(&dests)
}

// ErrNoDestination answers a pause or resume of a name the config does not have.
var ErrNoDestination = Errorf(ENOTFOUND, "no such destination: the names are the [[destination]] names of the config")

// Pause pauses dest, by the user by, for reason (cleaned: CleanPauseReason).
func (p *Pauser) Pause(ctx context.Context, dest, by, reason string) error {
	if !(*p.dests.Load())[dest] {
		return ErrNoDestination
	}
	if err := p.store.PauseDestination(ctx, dest, p.now(), by, CleanPauseReason(reason)); err != nil {
		return fmt.Errorf("pause %s: %w", dest, err)
	}
	p.tell()
	return nil
}

// Resume ends dest's pause: its waiting deliveries go out in accept order.
func (p *Pauser) Resume(ctx context.Context, dest string) error {
	if !(*p.dests.Load())[dest] {
		return ErrNoDestination
	}
	if err := p.store.ResumeDestination(ctx, dest); err != nil {
		return fmt.Errorf("resume %s: %w", dest, err)
	}
	p.tell()
	return nil
}

// Controls returns the stored controls by destination name.
func (p *Pauser) Controls(ctx context.Context) (map[string]DestinationControl, error) {
	return p.store.DestinationControls(ctx)
}

func (p *Pauser) tell() {
	if p.changed != nil {
		p.changed()
	}
}
