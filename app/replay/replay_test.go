package replay_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/replay"
)

// fakeStore holds deliveries in a map: the candidates are the finished
// ones the query's status wants, in id order; Requeue records its calls.
type fakeStore struct {
	ds       map[uint64]*app.Delivery
	requeues [][]uint64
	froms    [][]app.DeliveryState
	readCtx  error // ctx.Err() as ReplayCandidates saw it
	// beforeWrite, when set, runs at the start of each Requeue (a change
	// between the read and the write).
	beforeWrite func()
}

func newFakeStore(states ...app.DeliveryState) *fakeStore {
	f := &fakeStore{ds: map[uint64]*app.Delivery{}}
	for i, s := range states {
		id := uint64(i + 1)
		f.ds[id] = &app.Delivery{ID: id, EventSeq: id, Destination: "pos", State: s}
	}
	return f
}

func (f *fakeStore) ReplayCandidates(ctx context.Context, q app.ReplayQuery) ([]app.ReplayItem, bool, error) {
	f.readCtx = ctx.Err()
	var items []app.ReplayItem
	for id := uint64(1); id <= uint64(len(f.ds)); id++ {
		d := f.ds[id]
		if !q.Wants(d.State) || q.Delivery != 0 && q.Delivery != id {
			continue
		}
		if len(items) == q.Limit {
			return items, true, nil
		}
		items = append(items, app.ReplayItem{Delivery: id, Destination: d.Destination, State: d.State, EventSeq: id})
	}
	return items, false, ctx.Err()
}

func (f *fakeStore) ReplayPending(ctx context.Context, q app.ReplayQuery) (int, error) {
	q, _ = q.Check()
	n := 0
	for _, d := range f.ds {
		if q.Leaves(d, app.EventName{}, time.Time{}) {
			n++
		}
	}
	return n, nil
}

func (f *fakeStore) Requeue(ctx context.Context, ids []uint64, from []app.DeliveryState, now time.Time) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if f.beforeWrite != nil {
		f.beforeWrite()
	}
	f.requeues = append(f.requeues, slices.Clone(ids))
	f.froms = append(f.froms, from)
	n := 0
	for _, id := range ids {
		if d := f.ds[id]; d != nil && slices.Contains(from, d.State) {
			d.State, d.Due = app.Pending, now
			n++
		}
	}
	return n, nil
}

func (f *fakeStore) Delivery(ctx context.Context, id uint64) (*app.Delivery, []*app.Attempt, error) {
	d, ok := f.ds[id]
	if !ok {
		return nil, nil, app.ErrNotFound
	}
	c := *d
	return &c, nil, nil
}

func (f *fakeStore) EventNames(ctx context.Context, seqs []uint64) (map[uint64]app.EventName, error) {
	out := map[uint64]app.EventName{}
	for _, s := range seqs {
		out[s] = app.EventName{Source: "shop", ID: "wh-1"}
	}
	return out, nil
}

// ListEvents finds the event "shop"/"wh-1" (every delivery's event, as
// EventNames names them) as seq 1.
func (f *fakeStore) ListEvents(ctx context.Context, q app.EventQuery) ([]app.EventSummary, uint64, error) {
	if q.Source != "shop" || q.ID != "wh-1" {
		return nil, 0, nil
	}
	return []app.EventSummary{{Seq: 1, Source: "shop", ID: "wh-1"}}, 0, nil
}

// EventDeliveries returns every delivery, in id order, as event 1's.
func (f *fakeStore) EventDeliveries(ctx context.Context, seq uint64) ([]*app.Delivery, error) {
	var out []*app.Delivery
	for id := uint64(1); id <= uint64(len(f.ds)); id++ {
		c := *f.ds[id]
		out = append(out, &c)
	}
	return out, nil
}

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func service(s app.ReplayQueryStore, wakes *int) *replay.Service {
	return &replay.Service{Store: s, Now: func() time.Time { return t0 }, Wake: func() { *wakes++ }}
}

// A run writes what its dry run selected, app.ReplayBatch per write, and
// wakes the dispatcher once; a dry run writes nothing.
func TestService_Replay(t *testing.T) {
	t.Run("Batches", func(t *testing.T) {
		states := make([]app.DeliveryState, app.ReplayBatch*2+5)
		for i := range states {
			states[i] = app.Dead
		}
		f := newFakeStore(states...)
		var wakes int
		svc := service(f, &wakes)
		q := app.ReplayQuery{Status: app.ReplayAny, DryRun: true}
		dry, err := svc.Replay(context.Background(), replay.Request{Query: q})
		if err != nil || dry.Selected != len(states) || len(f.requeues) != 0 || wakes != 0 {
			t.Fatalf("dry run = %+v, %v, %d writes, %d wakes", dry, err, len(f.requeues), wakes)
		}
		q.DryRun = false
		run, err := svc.Replay(context.Background(), replay.Request{Query: q})
		if err != nil || run.Replayed != len(states) || run.Selected != dry.Selected || wakes != 1 {
			t.Fatalf("run = %+v, %v, %d wakes", run, err, wakes)
		}
		if len(f.requeues) != 3 || len(f.requeues[0]) != app.ReplayBatch || len(f.requeues[2]) != 5 || !slices.Equal(f.froms[0], []app.DeliveryState{app.Dead}) {
			t.Fatalf("writes of %d, %d, …; want batches of %d", len(f.requeues[0]), len(f.requeues[len(f.requeues)-1]), app.ReplayBatch)
		}
	})
	t.Run("SkipsDeliveredUnforced", func(t *testing.T) {
		// Issue 44: the run sends the dead one and skips the delivered
		// one, as the dry run's split said (it refused the whole run), and
		// both say the pending one is left alone.
		f := newFakeStore(app.Dead, app.Delivered, app.Pending)
		var wakes int
		svc := service(f, &wakes)
		dry, err := svc.Replay(context.Background(), replay.Request{Query: app.ReplayQuery{Status: app.ReplayAny, DryRun: true}})
		if err != nil {
			t.Fatal(err)
		}
		run, err := svc.Replay(context.Background(), replay.Request{Query: app.ReplayQuery{Status: app.ReplayAny}})
		want := app.ReplayCounts{DeadSent: 1, DeliveredSkipped: 1, PendingLeft: 1}
		if err != nil || run.Refused != 1 || run.Selected != 1 || run.Replayed != 1 || run.Counts != want || dry.Counts != want || wakes != 1 {
			t.Fatalf("unforced run over a dead and a delivered one = %+v, %v; dry run %+v", run, err, dry)
		}
		if f.ds[1].State != app.Pending || f.ds[2].State != app.Delivered {
			t.Fatalf("after the run: %v, %v; want the dead one pending, the delivered one left", f.ds[1].State, f.ds[2].State)
		}
		if got, want := dry.Counts.Say(false, "-force"), "3 match: 1 dead will be sent, 1 delivered skipped (-force sends it too), 1 pending left alone (on its way already)"; got != want {
			t.Errorf("dry run says %q, want %q", got, want)
		}
		if got, want := run.Counts.Say(true, "-force"), "3 match: 1 dead sent, 1 delivered skipped (-force sends it too), 1 pending left alone (on its way already)"; got != want {
			t.Errorf("run says %q, want %q", got, want)
		}
	})
	t.Run("ChangedMeanwhile", func(t *testing.T) {
		f := newFakeStore(app.Dead, app.Dead)
		f.beforeWrite = func() { f.ds[2].State = app.Delivered } // replayed and delivered by someone else
		var wakes int
		res, err := service(f, &wakes).Replay(context.Background(), replay.Request{Query: app.ReplayQuery{Status: app.ReplayAny}})
		if err != nil || res.Selected != 2 || res.Replayed != 1 || f.ds[2].State != app.Delivered || res.Counts.Changed != 1 {
			t.Fatalf("run = %+v, %v; want 1 of 2 replayed, the delivered one left alone", res, err)
		}
		if got, want := res.Counts.Say(true, "-force"), "2 match: 1 dead sent, 1 changed state meanwhile (replayed or swept) and left alone"; got != want {
			t.Errorf("run says %q, want %q", got, want)
		}
	})
	t.Run("RunGoesOnWhenTheCallerLeaves", func(t *testing.T) {
		f := newFakeStore(app.Dead)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var wakes int
		svc := service(f, &wakes)
		if _, err := svc.Replay(ctx, replay.Request{Query: app.ReplayQuery{Status: app.ReplayDead, DryRun: true}}); err == nil || f.readCtx == nil {
			t.Fatalf("dry run whose caller left = %v (store saw %v); want it stopped", err, f.readCtx)
		}
		res, err := svc.Replay(ctx, replay.Request{Query: app.ReplayQuery{Status: app.ReplayDead}})
		if err != nil || res.Replayed != 1 || f.readCtx != nil {
			t.Fatalf("run whose caller left = %+v, %v (store saw %v); want it done", res, err, f.readCtx)
		}
	})
	t.Run("SearchGate", func(t *testing.T) {
		f := newFakeStore(app.Dead)
		var wakes int
		svc := service(f, &wakes)
		svc.Searches = app.NewSearchGate(1, 1)
		leave, err := svc.Searches.Enter("someone")
		if err != nil {
			t.Fatal(err)
		}
		defer leave()
		q := app.ReplayQuery{Q: "1004", Status: app.ReplayDead, DryRun: true}
		if _, err := svc.Replay(context.Background(), replay.Request{Query: q, Caller: "ops"}); app.ErrorCode(err) != app.EBUSY {
			t.Fatalf("body search past a full gate = %v; want busy", err)
		}
		if _, err := svc.Replay(context.Background(), replay.Request{Query: q, Caller: "ops", Gated: true}); err != nil {
			t.Fatalf("body search of a caller in the gate already = %v", err)
		}
		if _, err := svc.Replay(context.Background(), replay.Request{Query: app.ReplayQuery{Status: app.ReplayDead, DryRun: true}}); err != nil {
			t.Fatalf("a replay without a body search waits for no gate: %v", err)
		}
	})
	t.Run("BadQuery", func(t *testing.T) {
		var wakes int
		if _, err := service(newFakeStore(), &wakes).Replay(context.Background(), replay.Request{Query: app.ReplayQuery{Status: "pending"}}); app.ErrorCode(err) != app.EINVALID {
			t.Fatalf("status pending = %v; want invalid", err)
		}
	})
}

// The replay of one delivery decides by the same verdict: dead goes,
// delivered only forced, pending is left; one delivered between the read
// and the write is refused, not sent again unasked.
func TestService_One(t *testing.T) {
	for _, tc := range []struct {
		name     string
		state    app.DeliveryState
		force    bool
		meantime app.DeliveryState // the state it takes before the write (0: none)
		code     string
		after    app.DeliveryState
	}{
		{"Dead", app.Dead, false, 0, "", app.Pending},
		{"DeliveredUnforced", app.Delivered, false, 0, app.ECONFLICT, app.Delivered},
		{"DeliveredForced", app.Delivered, true, 0, "", app.Pending},
		{"Pending", app.Pending, true, 0, "", app.Pending},
		{"DeliveredMeanwhile", app.Dead, false, app.Delivered, app.ECONFLICT, app.Delivered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeStore(tc.state)
			if tc.meantime != 0 {
				f.beforeWrite = func() { f.ds[1].State = tc.meantime }
			}
			var wakes int
			d, name, err := service(f, &wakes).One(context.Background(), 1, tc.force)
			code := ""
			if err != nil {
				code = app.ErrorCode(err)
			}
			if code != tc.code || d == nil || d.State != tc.state || name.ID != "wh-1" || f.ds[1].State != tc.after {
				t.Fatalf("One = %+v, %+v, %v; now %v; want code %q, then %v", d, name, err, f.ds[1].State, tc.code, tc.after)
			}
		})
	}
	var wakes int
	if _, _, err := service(newFakeStore(), &wakes).One(context.Background(), 9, false); err != app.ErrNotFound {
		t.Fatalf("One of an unknown id = %v", err)
	}
}

// Deliveries named one by one (hookbox replay ID…, -event SOURCE/ID): the
// server decides each by the one verdict and says what it did with it,
// in the order asked; the dry run says the same and writes nothing.
func TestService_Deliveries(t *testing.T) {
	for _, force := range []bool{false, true} {
		t.Run(fmt.Sprintf("force=%v", force), func(t *testing.T) {
			f := newFakeStore(app.Dead, app.Delivered, app.Pending)
			var wakes int
			svc := service(f, &wakes)
			want := []app.ReplayOutcome{app.ReplaySent, app.ReplaySkipped, app.ReplayLeft, app.ReplayNotFound}
			counts := app.ReplayCounts{DeadSent: 1, DeliveredSkipped: 1, PendingLeft: 1, NotFound: 1}
			if force {
				want[1] = app.ReplaySent
				counts.DeliveredSkipped, counts.DeliveredSent = 0, 1
			}
			outcomes := func(e app.ReplayEach) []app.ReplayOutcome {
				var out []app.ReplayOutcome
				for _, o := range e.Items {
					out = append(out, o.Outcome)
				}
				return out
			}
			dry, err := svc.Deliveries(context.Background(), []uint64{1, 2, 3, 9}, force, true)
			if err != nil || !slices.Equal(outcomes(dry), want) || dry.Counts != counts || len(f.requeues) != 0 || wakes != 0 {
				t.Fatalf("dry run = %+v, %v; want %v, %+v, nothing written", dry, err, want, counts)
			}
			run, err := svc.Deliveries(context.Background(), []uint64{1, 2, 3, 9}, force, false)
			if err != nil || !slices.Equal(outcomes(run), want) || run.Counts != dry.Counts || wakes != 1 {
				t.Fatalf("run = %+v, %v; want %v, %+v", run, err, want, counts)
			}
			if f.ds[1].State != app.Pending || (f.ds[2].State == app.Pending) != force {
				t.Fatalf("after the run: %v, %v", f.ds[1].State, f.ds[2].State)
			}
			if run.Items[0].Name() != "#1 pos ← shop/wh-1" || run.Items[3].Name() != "#9" {
				t.Errorf("names %q, %q", run.Items[0].Name(), run.Items[3].Name())
			}
			say := "3 match: 1 dead sent, 1 delivered skipped (-force sends it too), 1 pending left alone (on its way already), 1 not found"
			if force {
				say = "3 match: 1 dead and 1 delivered sent, 1 pending left alone (on its way already), 1 not found"
			}
			if got := run.Counts.Say(true, "-force"); got != say {
				t.Errorf("says %q, want %q", got, say)
			}
		})
	}
	t.Run("DeliveredMeanwhile", func(t *testing.T) {
		f := newFakeStore(app.Dead)
		f.beforeWrite = func() { f.ds[1].State = app.Delivered }
		var wakes int
		e, err := service(f, &wakes).Deliveries(context.Background(), []uint64{1}, false, false)
		if err != nil || e.Items[0].Outcome != app.ReplaySkipped || e.Counts != (app.ReplayCounts{DeliveredSkipped: 1}) || wakes != 0 {
			t.Fatalf("= %+v, %v, %d wakes; want it skipped, not sent again unasked", e, err, wakes)
		}
	})
	t.Run("Event", func(t *testing.T) {
		f := newFakeStore(app.Delivered, app.Dead)
		var wakes int
		svc := service(f, &wakes)
		e, err := svc.Event(context.Background(), "shop", "wh-1", false, false)
		if err != nil || e.Counts != (app.ReplayCounts{DeadSent: 1, DeliveredSkipped: 1}) || f.ds[2].State != app.Pending || f.ds[1].State != app.Delivered {
			t.Fatalf("Event = %+v, %v", e, err)
		}
		if _, err := svc.Event(context.Background(), "shop", "nope", false, false); app.ErrorCode(err) != app.ENOTFOUND {
			t.Fatalf("Event of an unknown event = %v; want not found", err)
		}
	})
}
