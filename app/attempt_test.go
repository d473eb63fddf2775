package app_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"hookbox/app"
	"hookbox/app/config"
)

// The attempt rule, by table: every outcome an attempt can come to.
func TestDecideAttempt(t *testing.T) {
	end := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	dest := &app.Destination{Name: "pos", Retry: []time.Duration{time.Minute, time.Hour}}
	waiting := &app.Delivery{Tries: 1, Due: end.Add(30 * time.Minute)}
	for _, tt := range []struct {
		name  string
		dl    *app.Delivery
		res   app.Answer
		early bool
		// want: the state, and the due time and the hold's end as waits
		// after end (-1: zero); for a scheduled retry, the bounds of its
		// jitter.
		state          app.DeliveryState
		dueMin, dueMax time.Duration
		held           time.Duration
		refused        bool
	}{
		{"Delivered", &app.Delivery{}, app.Answer{Delivered: true, Status: 200}, false, app.Delivered, -1, -1, -1, false},
		{"DeliveredIgnoresRetryAfter", &app.Delivery{}, app.Answer{Delivered: true, RetryAfter: time.Second}, false, app.Delivered, -1, -1, -1, false},
		{"FirstStep", &app.Delivery{}, app.Answer{Status: 500}, false, app.Pending, 48 * time.Second, 72 * time.Second, -1, false},
		{"SecondStep", &app.Delivery{Tries: 1}, app.Answer{Status: 500}, false, app.Pending, 48 * time.Minute, 72 * time.Minute, -1, false},
		{"ScheduleDone", &app.Delivery{Tries: 2}, app.Answer{Status: 500}, false, app.Dead, -1, -1, -1, false},
		{"Refused", &app.Delivery{}, app.Answer{Status: 410, Refused: true}, false, app.Dead, -1, -1, -1, true},
		{"RefusedEarly", waiting, app.Answer{Refused: true}, true, app.Dead, -1, -1, -1, true},
		{"RetryAfter", &app.Delivery{}, app.Answer{Status: 429, RetryAfter: 3 * time.Second}, false, app.Pending, 3 * time.Second, 3 * time.Second, 3 * time.Second, false},
		{"RetryAfterCapped", &app.Delivery{}, app.Answer{Status: 503, RetryAfter: 48 * time.Hour}, false, app.Pending, time.Hour, time.Hour, time.Hour, false},
		{"RetryAfterLastStep", &app.Delivery{Tries: 2}, app.Answer{Status: 429, RetryAfter: time.Second}, false, app.Dead, -1, -1, time.Second, false},
		{"EarlyKeepsStep", waiting, app.Answer{Status: 503}, true, app.Pending, 30 * time.Minute, 30 * time.Minute, -1, false},
		{"EarlyHeld", waiting, app.Answer{Status: 429, RetryAfter: 5 * time.Second}, true, app.Pending, 30 * time.Minute, 30 * time.Minute, 5 * time.Second, false},
		{"EarlyDelivered", waiting, app.Answer{Delivered: true}, true, app.Delivered, -1, -1, -1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := app.DecideAttempt(dest, tt.dl, tt.res, end, tt.early)
			at := func(d time.Duration) time.Time {
				if d < 0 {
					return time.Time{}
				}
				return end.Add(d)
			}
			if o.State != tt.state || o.Refused != tt.refused || !o.HeldUntil.Equal(at(tt.held)) {
				t.Fatalf("outcome = %+v; want state %v, refused %v, held until %v", o, tt.state, tt.refused, at(tt.held))
			}
			if tt.dueMin < 0 {
				if !o.Due.IsZero() {
					t.Fatalf("due %v, want none", o.Due)
				}
			} else if o.Due.Before(at(tt.dueMin)) || o.Due.After(at(tt.dueMax)) {
				t.Fatalf("due %v after the end, want %v to %v", o.Due.Sub(end), tt.dueMin, tt.dueMax)
			}
		})
	}
}

// The number a destination is told is its step in the schedule plus one,
// whatever probes came before: with 2 retries, 1 to 3, never more.
func TestAttemptNumber(t *testing.T) {
	for _, tt := range []struct{ tries, attempts, want int }{{0, 0, 1}, {1, 1, 2}, {1, 3, 2}, {2, 5, 3}} {
		if got := app.AttemptNumber(&app.Delivery{Tries: tt.tries, Attempts: tt.attempts}); got != tt.want {
			t.Errorf("AttemptNumber(tries %d, attempts %d) = %d, want %d", tt.tries, tt.attempts, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	b := app.Backoff{First: time.Second, Max: 10 * time.Second}
	var got []time.Duration
	for n := 1; n <= 6; n++ {
		got = append(got, b.Wait(n))
	}
	if want := []time.Duration{1e9, 2e9, 4e9, 8e9, 10e9, 10e9}; !slices.Equal(got, want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
	if got := b.Next(4 * time.Second); got != 8*time.Second {
		t.Fatalf("Next(4s) = %v, want 8s", got)
	}
	if got := b.Next(8 * time.Second); got != 10*time.Second {
		t.Fatalf("Next(8s) = %v, want the cap", got)
	}
	huge := app.Backoff{First: time.Second, Max: 1<<63 - 1}
	if got := huge.Next(1 << 62); got != huge.Max {
		t.Fatalf("Next near the largest Duration = %v, want the cap, not a wrapped value", got)
	}
	if got := huge.Wait(1000); got != huge.Max {
		t.Fatalf("Wait(1000) = %v, want the cap", got)
	}
}

// fakeOutbox is an outbox in memory for dispatcher tests in a synctest
// bubble: pending deliveries by id; every record is kept, and told on
// recorded.
type fakeOutbox struct {
	mu       sync.Mutex
	dls      map[uint64]*app.Delivery
	records  []app.AttemptRecord
	recorded chan app.AttemptRecord
	// recordDelay, when set, is how long each write takes (on the
	// bubble's clock).
	recordDelay time.Duration
}

func newFakeOutbox(dls ...*app.Delivery) *fakeOutbox {
	o := &fakeOutbox{dls: map[uint64]*app.Delivery{}, recorded: make(chan app.AttemptRecord, 100)}
	for _, d := range dls {
		d.State, d.Destination = app.Pending, "pos"
		o.dls[d.ID] = d
	}
	return o
}

func (o *fakeOutbox) FirePending(context.Context, time.Time) (map[string]int, time.Time, error) {
	return nil, time.Time{}, nil
}

func (o *fakeOutbox) pending(dest string, skip func(uint64) bool) []*app.Delivery {
	var ds []*app.Delivery
	for _, d := range o.dls {
		if d.State == app.Pending && d.Destination == dest && !skip(d.ID) {
			c := *d
			ds = append(ds, &c)
		}
	}
	slices.SortFunc(ds, func(a, b *app.Delivery) int {
		if c := a.Due.Compare(b.Due); c != 0 {
			return c
		}
		return int(a.ID) - int(b.ID)
	})
	return ds
}

func work(d *app.Delivery) app.Work {
	return app.Work{Delivery: d, Event: &app.Event{Seq: d.ID, Source: "gh", ID: fmt.Sprint("e", d.ID), Body: []byte("{}")}}
}

func (o *fakeOutbox) DueDeliveries(_ context.Context, dest string, now time.Time, limit int, skip func(uint64) bool) ([]app.Work, time.Time, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ws []app.Work
	for _, d := range o.pending(dest, skip) {
		if d.Due.After(now) || len(ws) == limit {
			return ws, d.Due, nil
		}
		ws = append(ws, work(d))
	}
	return ws, time.Time{}, nil
}

func (o *fakeOutbox) WaitingDeliveries(_ context.Context, dest string, afterDue time.Time, afterID uint64, limit int, skip func(uint64) bool) ([]app.Work, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ws []app.Work
	for _, d := range o.pending(dest, skip) {
		if !afterDue.IsZero() && (d.Due.Before(afterDue) || d.Due.Equal(afterDue) && d.ID <= afterID) {
			continue
		}
		if len(ws) < limit {
			ws = append(ws, work(d))
		}
	}
	return ws, nil
}

func (o *fakeOutbox) Backlog(_ context.Context, dest string, limit int) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return min(len(o.pending(dest, func(uint64) bool { return false })), limit), nil
}

func (o *fakeOutbox) RecordAttempts(_ context.Context, recs []app.AttemptRecord) []error {
	if o.recordDelay > 0 {
		time.Sleep(o.recordDelay) // the bubble's clock: a write that takes time
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range recs {
		d := o.dls[r.ID]
		d.Attempts++
		if !r.Early {
			d.Tries++
		}
		d.State, d.Due = r.State, r.Due
		r.Attempt.N = d.Attempts
		o.records = append(o.records, r)
		o.recorded <- r
	}
	return make([]error, len(recs))
}

// fakeSender answers each send with the next answer of its plan (the last
// one repeats), and keeps what it was asked and when.
type fakeSender struct {
	mu   sync.Mutex
	plan []app.Answer
	reqs []app.SendRequest
	at   []time.Time
}

func (s *fakeSender) Send(_ context.Context, req app.SendRequest) app.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	res := s.plan[min(len(s.reqs), len(s.plan)-1)]
	s.reqs, s.at = append(s.reqs, req), append(s.at, time.Now())
	res.Answered = true
	return res
}
func (s *fakeSender) Stop()  {}
func (s *fakeSender) Close() {}

func (s *fakeSender) sent() ([]app.SendRequest, []time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.reqs), slices.Clone(s.at)
}

// runFake runs a dispatcher of one destination "pos" (with retry and
// concurrency) over o and s until the test's bubble ends; setup (may be
// nil) sets it up before it runs.
func runFake(t *testing.T, retry string, concurrency int, o *fakeOutbox, s *fakeSender, setup func(*app.Dispatcher)) {
	t.Helper()
	cfg, err := config.Parse("test.toml", fmt.Sprintf("[[destination]]\nname = \"pos\"\nurl = \"http://127.0.0.1:1/\"\nretry = %s\nconcurrency = %d\n", retry, concurrency), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := app.NewDispatcher(cfg, o, s)
	if setup != nil {
		setup(d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { d.Run(ctx, context.Background()); close(ran) }()
	t.Cleanup(func() { cancel(); <-ran; d.Wait() })
}

var bad = app.Answer{Status: 500, Err: fmt.Errorf("HTTP 500")}

// A 429 with Retry-After: 3 from a destination of concurrency 1 holds its
// next send for 3 s. The hold used to be learnt when the attempt was
// recorded, after the sender had freed its slot: the next pass took the
// next delivery and sent it at once (1–11 ms later in real runs; here,
// with a record that takes 10 ms, at once).
func TestDispatcher_RetryAfterHoldsNextSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		o := newFakeOutbox(&app.Delivery{ID: 1, Due: now}, &app.Delivery{ID: 2, Due: now})
		o.recordDelay = 10 * time.Millisecond
		s := &fakeSender{plan: []app.Answer{{Status: 429, RetryAfter: 3 * time.Second}, {Status: 200, Delivered: true}}}
		runFake(t, `["1m"]`, 1, o, s, nil)
		for range 3 { // 1: 429; 2 after the hold; 1 again at its Retry-After
			<-o.recorded
		}
		_, at := s.sent()
		if len(at) < 2 || at[1].Sub(at[0]) < 3*time.Second {
			t.Fatalf("sends at %v: the second came %v after the 429, want its Retry-After (3s)", at, at[1].Sub(at[0]))
		}
	})
}

// A recovery probe sends a waiting delivery, is recorded as an attempt
// marked as a probe, keeps the delivery's step and due time, and tells
// the destination the number of the step it goes ahead of: with 2 retries
// the number never passes 3, however many probes came before (it used to
// count every attempt: HOOKBOX_ATTEMPT=4 after a probe).
func TestDispatcher_ProbeKeepsScheduleAndNumber(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		o := newFakeOutbox(&app.Delivery{ID: 1, Due: now}, &app.Delivery{ID: 2, Due: now})
		s := &fakeSender{plan: []app.Answer{bad}}
		runFake(t, `["1h", "2h"]`, 1, o, s, func(d *app.Dispatcher) { d.ProbeEvery, d.ProbeMax = time.Minute, time.Minute })
		var first []app.AttemptRecord
		for range 2 { // both fail: the destination looks down
			first = append(first, <-o.recorded)
		}
		var probes []app.AttemptRecord
		for range 3 { // a probe a minute, the deliveries in turn
			probes = append(probes, <-o.recorded)
		}
		reqs, _ := s.sent()
		for i, p := range probes {
			if !p.Attempt.Probe || !p.Early || p.State != app.Pending {
				t.Fatalf("probe %d recorded as %+v (attempt %+v); want an early attempt marked as a probe", i, p, p.Attempt)
			}
			due := first[0].Due
			if p.ID == first[1].ID {
				due = first[1].Due
			}
			if !p.Due.Equal(due) {
				t.Fatalf("probe %d moved delivery %d's due time to %v, want it kept at %v", i, p.ID, p.Due, due)
			}
			if n := reqs[2+i].Attempt; n != 2 {
				t.Fatalf("probe %d told the destination attempt %d, want 2 (the step it goes ahead of)", i, n)
			}
		}
		if first[0].Attempt.Probe || first[1].Attempt.Probe {
			t.Fatal("a scheduled attempt was marked as a probe")
		}
		// The retries then go out on their schedule with their step's
		// number, and the last is 3 (2 retries + 1), not 3 + the probes.
		o.mu.Lock()
		tries := o.dls[1].Tries
		o.mu.Unlock()
		if tries != 1 {
			t.Fatalf("after the probes delivery 1 is at step %d, want 1", tries)
		}
	})
}

// The number a delivery's last attempt carries, after probes, is the
// retry steps plus one: a delivery at its last step with five attempts
// behind it (probes) is told 3 with 2 retries, not 6.
func TestDispatcher_AttemptNumberNeverPassesSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newFakeOutbox(&app.Delivery{ID: 1, Due: time.Now(), Tries: 2, Attempts: 5})
		s := &fakeSender{plan: []app.Answer{bad}}
		runFake(t, `["1h", "2h"]`, 1, o, s, nil)
		if r := <-o.recorded; r.State != app.Dead {
			t.Fatalf("last step recorded as %v, want dead", r.State)
		}
		if reqs, _ := s.sent(); reqs[0].Attempt != 3 {
			t.Fatalf("the destination was told attempt %d, want 3 (2 retries + 1)", reqs[0].Attempt)
		}
	})
}
