package app_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"hookbox/app"
)

// steps records the starts and stops of parts, in order.
type steps struct {
	mu  sync.Mutex
	got []string
}

func (s *steps) add(step string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, step)
}

// part is a named part that records its start and stop in s, failing its
// start with startErr and taking stopTakes to stop.
func (s *steps) part(name string, startErr error, stopTakes time.Duration) app.Part {
	return app.Part{Name: name, Service: app.ServiceFuncs{
		StartFunc: func(context.Context) error {
			if startErr != nil {
				return startErr
			}
			s.add("start " + name)
			return nil
		},
		StopFunc: func(context.Context) error {
			time.Sleep(stopTakes) // the bubble's clock: what a slow part takes
			s.add("stop " + name)
			return nil
		},
	}}
}

func TestServices(t *testing.T) {
	t.Run("StartInOrderStopInReverse", func(t *testing.T) {
		var s steps
		svcs := &app.Services{Parts: []app.Part{s.part("store", nil, 0), s.part("dispatcher", nil, 0), s.part("server", nil, 0)}}
		if err := svcs.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := svcs.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := []string{"start store", "start dispatcher", "start server", "stop server", "stop dispatcher", "stop store"}
		if !slices.Equal(s.got, want) {
			t.Fatalf("steps %q; want %q", s.got, want)
		}
		if err := svcs.Stop(context.Background()); err != nil || len(s.got) != len(want) {
			t.Fatalf("a second Stop: %v, steps %q; want nothing more", err, s.got)
		}
	})

	t.Run("FailedStartStopsWhatStarted", func(t *testing.T) {
		var s steps
		refused := errors.New("listen on 127.0.0.1:1: address already in use")
		svcs := &app.Services{Parts: []app.Part{s.part("store", nil, 0), s.part("dispatcher", nil, 0), s.part("server", refused, 0), s.part("certificates", nil, 0)}}
		err := svcs.Start(context.Background())
		if !errors.Is(err, refused) || !strings.HasPrefix(err.Error(), "start server: listen on") {
			t.Fatalf("Start = %v; want the server's error, naming it", err)
		}
		want := []string{"start store", "start dispatcher", "stop dispatcher", "stop store"}
		if !slices.Equal(s.got, want) {
			t.Fatalf("steps %q; want %q", s.got, want)
		}
	})

	t.Run("StopErrorsNameThePart", func(t *testing.T) {
		var s steps
		broken := errors.New("close: bad file descriptor")
		svcs := &app.Services{Parts: []app.Part{s.part("store", nil, 0),
			{Name: "mail", Service: app.ServiceFuncs{StopFunc: func(context.Context) error { return broken }}}}}
		if err := svcs.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		err := svcs.Stop(context.Background())
		if !errors.Is(err, broken) || err.Error() != "stop mail: close: bad file descriptor" {
			t.Fatalf("Stop = %v", err)
		}
		if !slices.Equal(s.got, []string{"start store", "stop store"}) {
			t.Fatalf("steps %q: the parts before the failed one stop too", s.got)
		}
	})

	t.Run("OverrunReported", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var s steps
			svcs := &app.Services{Overrun: time.Second, Parts: []app.Part{s.part("store", nil, 0), s.part("dispatcher", nil, 3*time.Second), s.part("server", nil, time.Second)}}
			if err := svcs.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			err := svcs.Stop(ctx)
			// server stops within the deadline; dispatcher ends at 4 s, past
			// the deadline (2 s) and the overrun (1 s): reported, waited for.
			if !errors.Is(err, app.ErrOverran) || !strings.HasPrefix(err.Error(), "stop dispatcher: overran") || strings.Contains(err.Error(), "server") || strings.Contains(err.Error(), "store") {
				t.Fatalf("Stop = %v; want the dispatcher's overrun only", err)
			}
			if took := time.Since(start); took != 4*time.Second {
				t.Fatalf("Stop took %v; want 4s (the dispatcher waited for)", took)
			}
			want := []string{"start store", "start dispatcher", "start server", "stop server", "stop dispatcher", "stop store"}
			if !slices.Equal(s.got, want) {
				t.Fatalf("steps %q; want %q", s.got, want)
			}
		})
	})

	t.Run("Loop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ended := false
			l := app.Loop(func(ctx context.Context) { <-ctx.Done(); ended = true })
			if err := l.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			if ended {
				t.Fatal("the loop ended before Stop")
			}
			if err := l.Stop(context.Background()); err != nil || !ended {
				t.Fatalf("Stop = %v, ended %v; want the loop returned", err, ended)
			}
		})
	})
}

func TestAppliers(t *testing.T) {
	var got []string
	old, next := &app.Config{}, &app.Config{}
	refuse := false
	as := app.Appliers{
		{Name: "sender", Apply: func(*app.Config) { got = append(got, "sender") }},
		{Name: "scheduler", Check: func(o, n *app.Config) error {
			if o != old || n != next {
				t.Errorf("Check got the wrong configs")
			}
			if refuse {
				return errors.New("bad spec")
			}
			return nil
		}, Apply: func(*app.Config) { got = append(got, "scheduler") }},
		{Name: "receiver", Apply: func(*app.Config) { got = append(got, "receiver") }},
	}
	if err := as.Check(old, next); err != nil {
		t.Fatal(err)
	}
	as.Apply(next)
	if !slices.Equal(got, []string{"sender", "scheduler", "receiver"}) {
		t.Fatalf("applied %q; want all, in order", got)
	}
	got, refuse = nil, true
	if err := as.Check(old, next); err == nil || err.Error() != "scheduler: bad spec" || len(got) != 0 {
		t.Fatalf("Check = %v, applied %q; want the scheduler's refusal and nothing applied", err, got)
	}
}
