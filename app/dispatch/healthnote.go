package dispatch

// The dispatcher's view of each destination's health, stored when it
// changes (the first failure of an episode, its next try after an
// attempt, its recovery) so that the page, the API and the alerts read
// the same after a restart and on every node; and read back at start, so
// that a restart neither forgets an episode nor tries the destination
// before the next try it had.

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"hookbox/app"
)

// healthNotes are the changes of health not stored yet (d.mu guards
// queue); write keeps their writes in order.
type healthNotes struct {
	queue []healthNote
	write sync.Mutex
}

// healthNote is a change of a destination's health, to be stored.
type healthNote struct {
	dest string
	view app.DestinationHealth
	// failedFor, on a recovery, is how long the episode lasted.
	failedFor time.Duration
}

// maxLoggedWaiting bounds the count of waiting deliveries the recovery
// line says.
const maxLoggedWaiting = 100000

// noteHealth queues n, a change of l's health, for flushHealth, and shows
// it at once on this node's page (Stats); d.mu is held.
func (d *Dispatcher) noteHealth(l *lane, h *destHealth, n healthNote) {
	n.dest, n.view = l.dest.Name, n.view.AsStored()
	h.shownSince, h.shownNext = n.view.FailingSince, n.view.NextTry
	if k := len(d.notes.queue) - 1; k >= 0 && d.notes.queue[k].dest == n.dest &&
		!n.view.FailingSince.IsZero() && d.notes.queue[k].view.FailingSince.Equal(n.view.FailingSince) {
		d.notes.queue[k] = n // a newer next try of the same episode
	} else {
		d.notes.queue = append(d.notes.queue, n)
	}
	d.Stats.DestState(n.dest, n.view)
}

// flushHealth stores the noted changes, in order, and logs each recovery
// once, with how long the destination failed and how many deliveries
// wait for it. A change that cannot be stored stays shown on this node
// (the store's own trouble is reported by StorageHealth).
func (d *Dispatcher) flushHealth() {
	d.mu.Lock()
	none := len(d.notes.queue) == 0
	d.mu.Unlock()
	if none { // nearly always: health changes once per episode and attempt
		return
	}
	d.notes.write.Lock()
	defer d.notes.write.Unlock()
	d.mu.Lock()
	notes := d.notes.queue
	d.notes.queue = nil
	d.mu.Unlock()
	ctx := context.Background()
	for _, n := range notes {
		if d.Health != nil {
			if err := d.Health.SaveDestinationHealth(ctx, n.dest, n.view); err != nil {
				d.Logger.Warn("store a destination's health: this node's page shows it, others may not", "destination", n.dest, slog.Any("error", err))
			} else {
				d.Stats.HealthSaved(n.dest, n.view)
			}
		}
		if !n.view.FailingSince.IsZero() {
			continue
		}
		attrs := []any{"destination", n.dest, "failed_for", n.failedFor.Round(time.Millisecond)}
		if waiting, err := d.store.Backlog(ctx, n.dest, maxLoggedWaiting); err == nil {
			attrs = append(attrs, "waiting", waiting)
		}
		d.Logger.Info("destination answers again", attrs...)
	}
}

// loadHealth gives each lane the stored health of its destination, when
// it is failing: the episode goes on (no second first-failure line, the
// same "failing since"), and the destination is not probed before the
// next try stored (or, with none, ProbeEvery from now). Only Run calls
// it, before its first pass.
func (d *Dispatcher) loadHealth(ctx context.Context, now time.Time) {
	if d.Health == nil {
		return
	}
	hs, err := d.Health.DestinationHealths(ctx)
	if err != nil {
		d.Logger.Warn("read the destinations' health: failing ones start afresh", slog.Any("error", err))
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.lanes {
		s := hs[l.dest.Name]
		if s.FailingSince.IsZero() || l.health != nil {
			continue
		}
		h := l.healthOf(d.ProbeEvery)
		h.failingSince, h.others, h.lastError = s.FailingSince, true, s.LastError
		h.notBefore, h.lastAttempt = s.NextTry, now.Add(-d.ProbeEvery)
		if s.NextTry.IsZero() {
			h.lastAttempt = now
		}
		h.shownSince, h.shownNext = s.FailingSince, s.NextTry
		d.Stats.HealthSaved(l.dest.Name, s)
	}
}

// adoptHealth learns what the store says of l's destination, which other
// nodes of a cluster merge their views into; d.mu is held. A success
// stored after l's failures began ends l's episode too (the node that saw
// it logged and stored it), or moves it to the episode stored since.
func (d *Dispatcher) adoptHealth(l *lane, s app.DestinationHealth) {
	l.stored = s
	h := l.health
	if h == nil || h.failingSince.IsZero() || !s.RecoveredAt.After(h.failingSince) {
		return
	}
	if s.FailingSince.IsZero() {
		h.failingSince, h.others, h.notBefore, h.lastError = time.Time{}, false, time.Time{}, ""
		h.probeWait, h.probeFrom = d.ProbeEvery, position{}
		h.shownSince, h.shownNext, h.recoveredAt = time.Time{}, time.Time{}, s.RecoveredAt
		d.Stats.DestState(l.dest.Name, s)
		d.Stats.HealthSaved(l.dest.Name, s)
		return
	}
	h.failingSince, h.shownSince = s.FailingSince, s.FailingSince
}

// endStored notes a recovery of l's destination when a success here ends
// an episode only the store knows (another node's failures); d.mu is
// held.
func (d *Dispatcher) endStored(l *lane, h *destHealth, end time.Time) {
	s := l.stored.FailingSince
	if s.IsZero() || !end.After(s) || !s.After(h.recoveredAt) { // none, or one this node ended (a read before its write)
		return
	}
	l.stored.FailingSince, h.recoveredAt = time.Time{}, end
	d.noteHealth(l, h, healthNote{view: app.DestinationHealth{RecoveredAt: end}, failedFor: end.Sub(s)})
}
