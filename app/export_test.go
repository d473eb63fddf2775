package app

import (
	"time"
)

// GlobSteps is Glob with the number of steps it took.
var GlobSteps = glob

// OnRecorded has d call f after each batch of attempts it recorded (or
// failed to); set before Run.
func OnRecorded(d *Dispatcher, f func()) { d.onRecorded = f }

// OnPass has d call f after each pass over the outbox, with the clock's
// time just before the pass began; it may be set (nil: none) while d runs.
func OnPass(d *Dispatcher, f func(began time.Time)) {
	if f == nil {
		d.onPass.Store(nil)
		return
	}
	d.onPass.Store(&f)
}

// SearchSteps is the work Search.In does on body (bytes skipped, compared
// and fallbacks), for the test of its worst case.
func SearchSteps(s Search, body []byte) int {
	_, steps := s.index(body)
	return steps
}
