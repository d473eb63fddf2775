package dispatch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/dispatch"
)

// fakeOutbox is an outbox in memory for dispatcher tests in a synctest
// bubble: pending deliveries by id; every record is kept, and told on
// recorded.
type fakeOutbox struct {
	mu       sync.Mutex
	dls      map[uint64]*app.Delivery
	records  []app.AttemptRecord
	recorded chan app.AttemptRecord
	// recordGate, when set, holds every write until it is closed (a
	// slow disk, for as long as the test wants).
	recordGate chan struct{}
	// failing, while set, makes every write fail (a full disk); the
	// attempts it could not record are told on unrecorded.
	failing    atomic.Bool
	unrecorded chan app.AttemptRecord
}

func newFakeOutbox(dls ...*app.Delivery) *fakeOutbox {
	o := &fakeOutbox{dls: map[uint64]*app.Delivery{}, recorded: make(chan app.AttemptRecord, 100),
		unrecorded: make(chan app.AttemptRecord, 100)}
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
	if o.recordGate != nil {
		<-o.recordGate
	}
	if o.failing.Load() {
		errs := make([]error, len(recs))
		for i, r := range recs {
			errs[i] = errors.New("write hookbox.db: no space left on device")
			o.unrecorded <- r
		}
		return errs
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
func runFake(t *testing.T, retry string, concurrency int, o *fakeOutbox, s app.Sender, setup func(*dispatch.Dispatcher)) {
	t.Helper()
	cfg, err := config.Parse("test.toml", fmt.Sprintf("[[destination]]\nname = \"pos\"\nurl = \"http://127.0.0.1:1/\"\nretry = %s\nconcurrency = %d\n", retry, concurrency), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := dispatch.New(cfg, o, s)
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
// with the 429's record held back, at once).
func TestDispatcher_RetryAfterHoldsNextSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		o := newFakeOutbox(&app.Delivery{ID: 1, Due: now}, &app.Delivery{ID: 2, Due: now})
		o.recordGate = make(chan struct{})
		s := &fakeSender{plan: []app.Answer{{Status: 429, RetryAfter: 3 * time.Second}, {Status: 200, Delivered: true}}}
		runFake(t, `["1m"]`, 1, o, s, nil)
		synctest.Wait() // the 429 came, its record waits: all the dispatcher does meanwhile is done
		if reqs, _ := s.sent(); len(reqs) != 1 {
			t.Fatalf("%d sends while the 429's record was being written; want the destination held", len(reqs))
		}
		close(o.recordGate)
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
		runFake(t, `["1h", "2h"]`, 1, o, s, func(d *dispatch.Dispatcher) { d.ProbeEvery, d.ProbeMax = time.Minute, time.Minute })
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

// An attempt that cannot be recorded (a full disk) leaves its delivery
// due, but it goes out again only StoreRetry later, then twice as long
// after each failed record, up to StoreRetryMax: not in a tight loop
// against the destination. Once the store records again the next send is
// recorded as delivered.
func TestDispatcher_UnrecordedWaitsStoreRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := newFakeOutbox(&app.Delivery{ID: 1, Due: time.Now()})
		o.failing.Store(true)
		s := &fakeSender{plan: []app.Answer{{Status: 200, Delivered: true}}}
		runFake(t, `["1h"]`, 1, o, s, func(d *dispatch.Dispatcher) {
			d.StoreRetry, d.StoreRetryMax = 300*time.Millisecond, time.Second
		})
		want := []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, time.Second, time.Second}
		for range len(want) + 1 {
			if r := <-o.unrecorded; r.ID != 1 {
				t.Fatalf("unrecorded attempt of delivery %d, want 1", r.ID)
			}
		}
		_, at := s.sent()
		if len(at) != len(want)+1 {
			t.Fatalf("%d sends for %d failed records", len(at), len(want)+1)
		}
		for i, w := range want {
			if gap := at[i+1].Sub(at[i]); gap != w {
				t.Fatalf("send %d came %v after send %d, whose attempt could not be recorded; want %v (sends at %v)", i+2, gap, i+1, w, at)
			}
		}
		o.failing.Store(false)
		if r := <-o.recorded; r.ID != 1 || r.State != app.Delivered {
			t.Fatalf("once the store records again: %+v; want delivery 1 delivered", r)
		}
	})
}

// outage answers 500 until up, then 200, and keeps when it was asked.
type outage struct {
	mu sync.Mutex
	up time.Time
	at []time.Time
}

func (s *outage) Send(context.Context, app.SendRequest) app.Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.at = append(s.at, now)
	if now.Before(s.up) {
		return app.Answer{Status: 500, Err: fmt.Errorf("HTTP 500"), Answered: true}
	}
	return app.Answer{Status: 200, Delivered: true, Answered: true}
}
func (s *outage) Stop()  {}
func (s *outage) Close() {}

// A destination down for 10 minutes is probed at least once a minute
// with the default settings, so that once it is back every delivery
// waiting for it is sent within a minute and the walk's few seconds. The
// probes used to space out to 5 minutes: one back after a 10-minute
// outage waited up to 5 minutes more for its backlog.
func TestDispatcher_ProbesAtLeastEveryMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var dls []*app.Delivery
		for i := range 10 {
			dls = append(dls, &app.Delivery{ID: uint64(i + 1), Due: start})
		}
		o := newFakeOutbox(dls...)
		s := &outage{up: start.Add(10 * time.Minute)}
		runFake(t, `["1h", "2h"]`, 2, o, s, nil)
		time.Sleep(10*time.Minute + time.Minute + 5*time.Second) // the bubble's clock: the outage, a minute of probes after it, the walk
		synctest.Wait()
		s.mu.Lock()
		at := slices.Clone(s.at)
		s.mu.Unlock()
		last := start
		for _, a := range at {
			if !a.After(s.up) && a.Sub(last) > time.Minute {
				t.Fatalf("no send from %v to %v after the destination failed; want a probe at least every minute (sends at %v)", last.Sub(start), a.Sub(start), at)
			}
			last = a
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, d := range o.dls {
			if d.State != app.Delivered {
				t.Fatalf("delivery %d is %v %v after the destination came back; want every waiting one delivered within 65 s (sends at %v)", d.ID, d.State, time.Since(s.up), at)
			}
		}
	})
}
