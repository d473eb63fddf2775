package replay_test

import (
	"context"
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
	t.Run("RefusedUnforced", func(t *testing.T) {
		f := newFakeStore(app.Dead, app.Delivered, app.Pending)
		var wakes int
		res, err := service(f, &wakes).Replay(context.Background(), replay.Request{Query: app.ReplayQuery{Status: app.ReplayAny}})
		if app.ErrorCode(err) != app.ECONFLICT || res.Refused != 1 || res.Selected != 0 || len(f.requeues) != 0 || wakes != 0 {
			t.Fatalf("unforced run over a delivered one = %+v, %v, %d writes", res, err, len(f.requeues))
		}
	})
	t.Run("ChangedMeanwhile", func(t *testing.T) {
		f := newFakeStore(app.Dead, app.Dead)
		f.beforeWrite = func() { f.ds[2].State = app.Delivered } // replayed and delivered by someone else
		var wakes int
		res, err := service(f, &wakes).Replay(context.Background(), replay.Request{Query: app.ReplayQuery{Status: app.ReplayAny}})
		if err != nil || res.Selected != 2 || res.Replayed != 1 || f.ds[2].State != app.Delivered {
			t.Fatalf("run = %+v, %v; want 1 of 2 replayed, the delivered one left alone", res, err)
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
