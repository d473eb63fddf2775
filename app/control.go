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

// pacer spaces a lane's starts by its rate; d.mu guards it.
type pacer struct {
	spacing time.Duration
	next    time.Time // the earliest start of the next attempt
}

// paceAhead is how much of a rate's time one pass fills: it starts up to
// paceAhead's worth of attempts, each given its slot (job.at), for which
// its sender waits; the starts stay evenly spaced, and a pass (a read of
// the outbox, and on PostgreSQL a reservation) serves several of them.
// A pass may come paceLead before the next slot, so that its own time is
// not added to the spacing.
const (
	paceAhead = 100 * time.Millisecond
	paceLead  = paceAhead / 2
)

// allow returns how many of want attempts a pass at now may start (0:
// none before the returned time).
func (p *pacer) allow(now time.Time, want int) (int, time.Time) {
	if p.spacing <= 0 {
		return want, time.Time{}
	}
	if p.next.After(now.Add(paceLead)) {
		return 0, p.next.Add(-paceLead)
	}
	n := 1 + int(paceAhead/p.spacing)
	return min(n, want), time.Time{}
}

// DefaultControlEvery is Dispatcher.ControlEvery's default.
const DefaultControlEvery = 250 * time.Millisecond

// laneHold is a Retry-After hold of a lane, to be stored.
type laneHold struct {
	lane  *lane
	until time.Time
}

// ControlsChanged tells the dispatcher that a destination was paused or
// resumed through this node: it reads the controls at its next pass.
func (d *Dispatcher) ControlsChanged() {
	d.controlsOld.Store(true)
	d.Wake()
}

// readControls reads the stored controls into the lanes when the last read
// is ControlEvery old or ControlsChanged was called, and returns when to
// read again while a lane is paused (zero: none is). A failed read keeps
// what the last one said. Only the Run goroutine calls it.
func (d *Dispatcher) readControls(ctx context.Context, now time.Time) (poll time.Time) {
	if d.Controls == nil {
		return time.Time{}
	}
	changed := d.controlsOld.Swap(false)
	if changed || d.controlsRead.IsZero() || now.Sub(d.controlsRead) >= d.ControlEvery || now.Before(d.controlsRead) {
		d.controlsRead = now
		cs, err := d.Controls.DestinationControls(ctx)
		if err != nil {
			if ok, held := d.controlLog.Allow(now, time.Minute); ok {
				d.Logger.Warn("read the destinations' pauses: the last ones read stay in force", "error", err, "also_failed", held)
			}
		} else {
			d.mu.Lock()
			for _, l := range d.lanes {
				c := cs[l.dest.Name]
				if c.Paused != l.paused {
					d.Logger.Info("destination paused", "destination", l.dest.Name, "paused", c.Paused, "by", c.PausedBy)
				}
				l.paused = c.Paused
				if c.HeldUntil.After(l.held) {
					l.held = c.HeldUntil
				}
				d.adoptHealth(l, c.Health)
			}
			d.mu.Unlock()
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.lanes {
		if l.paused {
			return d.controlsRead.Add(d.ControlEvery)
		}
	}
	return time.Time{}
}

// storeHolds stores the Retry-After holds heard, so that every node holds
// the destination; a hold that cannot be stored still holds this node.
func (d *Dispatcher) storeHolds(holds []laneHold) {
	if d.Controls == nil {
		return
	}
	for _, h := range holds {
		if err := d.Controls.HoldDestination(context.Background(), h.lane.name, h.until); err != nil {
			d.Logger.Warn("store a destination's Retry-After hold: only this node holds it", "destination", h.lane.name, "error", err)
		}
	}
}

// paceJobs gives each of jobs, about to start on l at now, its slot of l's
// rate, and returns l's next free slot (zero: l has no rate). Without
// Rates the slots are this node's (one node: bbolt); with it,
// they are reserved for the cluster, so nodes together keep the rate.
// A job whose slot is later than now waits for it in its sender.
func (d *Dispatcher) paceJobs(ctx context.Context, l *lane, now time.Time, jobs []job) time.Time {
	sp := l.pace.spacing
	if sp <= 0 {
		return time.Time{}
	}
	d.mu.Lock()
	base := later(l.pace.next, now)
	d.mu.Unlock()
	if len(jobs) == 0 {
		return base
	}
	if d.Rates != nil {
		first, storeNow, err := d.Rates.ReserveStarts(ctx, l.dest.Name, len(jobs), sp)
		if err == nil {
			base = later(now.Add(first.Sub(storeNow)), now) // by this node's clock
		} else if ok, held := d.controlLog.Allow(now, time.Minute); ok {
			d.Logger.Warn("reserve starts of a destination's rate: this node paces alone", "destination", l.dest.Name, "error", err, "also_failed", held)
		}
	}
	for i := range jobs {
		if at := base.Add(time.Duration(i) * sp); at.After(now) {
			jobs[i].at = at
		}
	}
	d.mu.Lock()
	l.pace.next = base.Add(time.Duration(len(jobs)) * sp)
	next := l.pace.next
	d.mu.Unlock()
	return next
}

// waitSlot waits until at (a job's slot of its rate), or until Run stops.
func (d *Dispatcher) waitSlot(at time.Time) {
	wait := at.Sub(d.Now())
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-d.stop:
	}
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
