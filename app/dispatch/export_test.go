package dispatch

import "time"

// DestFailing reports whether d takes dest to be failing: an attempt of
// its failed since its last success, as far as its lane heard.
func DestFailing(d *Dispatcher, dest string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, l := range d.lanes {
		if l.dest.Name == dest {
			return l.health != nil && !l.health.failingSince.IsZero()
		}
	}
	return false
}

// OnRecorded has d call f after each batch of attempts it recorded (or
// failed to); set before Run.
func OnRecorded(d *Dispatcher, f func()) { d.signals.onRecorded = f }

// OnPass has d call f after each pass over the outbox, with the clock's
// time just before the pass began; it may be set (nil: none) while d runs.
func OnPass(d *Dispatcher, f func(began time.Time)) {
	if f == nil {
		d.signals.onPass.Store(nil)
		return
	}
	d.signals.onPass.Store(&f)
}
