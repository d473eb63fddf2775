package app

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

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
