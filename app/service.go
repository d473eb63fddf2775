// One lifecycle for every long-running part of the server: each is a
// Service, and Services starts them in one ordered list and stops them in
// reverse (river's startstop is the model).

package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Service is a long-running part of the server (an HTTP server, the
// dispatcher, the stream hub, the scheduler…). Start sets it going and
// returns once it runs, or with the reason it cannot; Stop asks it to end
// and returns once it has, cutting what it must when ctx's deadline passes.
type Service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// Part is a Service with the name its errors and log lines carry.
type Part struct {
	Name string
	Service
}

// ServiceFuncs is a Service of two functions; a nil one does nothing.
type ServiceFuncs struct {
	StartFunc, StopFunc func(ctx context.Context) error
}

// Start calls StartFunc.
func (f ServiceFuncs) Start(ctx context.Context) error {
	if f.StartFunc == nil {
		return nil
	}
	return f.StartFunc(ctx)
}

// Stop calls StopFunc.
func (f ServiceFuncs) Stop(ctx context.Context) error {
	if f.StopFunc == nil {
		return nil
	}
	return f.StopFunc(ctx)
}

// Loop is a Service that runs fn in a goroutine of its own until Stop (or
// the end of Start's ctx) cancels the ctx fn was given; Stop waits for fn
// to return.
func Loop(fn func(ctx context.Context)) Service {
	return &loop{fn: fn}
}

type loop struct {
	fn     func(ctx context.Context)
	cancel context.CancelFunc
	done   chan struct{}
}

func (l *loop) Start(ctx context.Context) error {
	ctx, l.cancel = context.WithCancel(ctx)
	l.done = make(chan struct{})
	go func() { defer close(l.done); l.fn(ctx) }()
	return nil
}

func (l *loop) Stop(ctx context.Context) error {
	if l.cancel == nil {
		return nil
	}
	l.cancel()
	select {
	case <-l.done:
		return nil
	case <-ctx.Done():
		<-l.done // Services reports it when it takes long past the deadline
		return nil
	}
}

// ErrOverran marks a part that was still stopping Overrun after its stop
// deadline; Services waited for it all the same.
var ErrOverran = errors.New("overran its stop deadline")

// Services starts its parts in order and stops the started ones in
// reverse: what a part needs is listed before it, and is still there
// while it stops.
type Services struct {
	Parts []Part
	// Overrun is how long past the stop deadline a part may take before
	// it is reported (logged at once, and in Stop's error); it is waited
	// for still, so nothing is closed under it. Zero: DefaultOverrun.
	Overrun time.Duration
	// StopWithin bounds the stop of what started when a later part fails
	// to start (zero: no deadline).
	StopWithin time.Duration
	Logger     *slog.Logger

	started int // how many of Parts started
}

// DefaultOverrun is Services.Overrun when it is not set.
const DefaultOverrun = time.Second

// Start starts the parts in order. When one fails, the ones started are
// stopped in reverse (with ctx's values, within StopWithin) and the error
// names the part.
func (s *Services) Start(ctx context.Context) error {
	for _, p := range s.Parts {
		if err := p.Start(ctx); err != nil {
			sctx, cancel := context.WithoutCancel(ctx), context.CancelFunc(func() {})
			if s.StopWithin > 0 {
				sctx, cancel = context.WithTimeout(sctx, s.StopWithin)
			}
			defer cancel()
			return errors.Join(fmt.Errorf("start %s: %w", p.Name, err), s.Stop(sctx))
		}
		s.started++
	}
	return nil
}

// Started returns the names of the parts started, in order.
func (s *Services) Started() []string {
	names := make([]string, s.started)
	for i := range names {
		names[i] = s.Parts[i].Name
	}
	return names
}

// Stop stops the started parts in reverse, each with ctx (whose deadline
// bounds the whole stop), and returns their errors, each naming its part.
// A part still stopping Overrun after the deadline (or after it began,
// when it began later) is logged then, and its error wraps ErrOverran.
func (s *Services) Stop(ctx context.Context) error {
	var errs []error
	for ; s.started > 0; s.started-- {
		p := s.Parts[s.started-1]
		if err := s.stopPart(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("stop %s: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}

// stopPart stops p, watching its deadline.
func (s *Services) stopPart(ctx context.Context, p Part) error {
	done := make(chan error, 1)
	go func() { done <- p.Stop(ctx) }()
	var late <-chan time.Time
	if deadline, ok := ctx.Deadline(); ok {
		// A part that begins its stop after the deadline (one before it
		// overran) has Overrun from its beginning.
		t := time.NewTimer(max(time.Until(deadline), 0) + s.overrun())
		defer t.Stop()
		late = t.C
	}
	select {
	case err := <-done:
		return err
	case <-late:
	}
	s.logger().Error("stop overran its deadline; waiting for it", "part", p.Name, "overrun", s.overrun())
	return errors.Join(ErrOverran, <-done)
}

func (s *Services) overrun() time.Duration {
	if s.Overrun > 0 {
		return s.Overrun
	}
	return DefaultOverrun
}

func (s *Services) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.With("component", "serve")
}
