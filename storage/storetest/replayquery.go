package storetest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/replay"
	"hookbox/storage"
)

// replayQuery runs replay by query q over s as app/replay does, at now,
// forced: the query's status alone says which finished deliveries go.
func replayQuery(ctx context.Context, s app.ReplayQueryStore, q app.ReplayQuery, now time.Time) (app.ReplayResult, error) {
	svc := replay.Service{Store: s, Now: func() time.Time { return now }}
	return svc.Replay(ctx, replay.Request{Query: q, Force: true})
}

// replayModel is what the replay-by-query test stored: each delivery with
// its event's name and received time, in id order.
type replayModel struct {
	ds  []*app.Delivery
	ev  map[uint64]app.EventName
	at  map[uint64]time.Time
	ids []uint64
}

// want returns the ids of the model's deliveries q selects, in id order.
func (m *replayModel) want(q app.ReplayQuery) []uint64 {
	q, _ = q.Check()
	var out []uint64
	for _, d := range m.ds {
		if q.Matches(d, m.ev[d.EventSeq], m.at[d.EventSeq]) {
			out = append(out, d.ID)
		}
	}
	return out
}

// pending counts the model's pending deliveries a replay by q leaves
// alone and says so (app.ReplayQuery.Leaves).
func (m *replayModel) pending(q app.ReplayQuery) int {
	q, _ = q.Check()
	n := 0
	for _, d := range m.ds {
		if q.Leaves(d, m.ev[d.EventSeq], m.at[d.EventSeq]) {
			n++
		}
	}
	return n
}

// storeReplayModel accepts 12 events a minute apart from T0 (sources shop
// and pay, topics orders/create and refunds/create), each with a delivery
// to pos and to erp, and leaves a third of the deliveries delivered, a
// third dead and a third pending (after a failed attempt).
func storeReplayModel(t *testing.T, s storage.Store) *replayModel {
	t.Helper()
	m := &replayModel{ev: map[uint64]app.EventName{}, at: map[uint64]time.Time{}}
	for i := range 12 {
		src, topic := "shop", "orders/create"
		if i%3 == 2 {
			src = "pay"
		}
		if i%2 == 1 {
			topic = "refunds/create"
		}
		at := T0.Add(time.Duration(i) * time.Minute)
		e := NewEvent(src, fmt.Sprintf("wh-%d", 1000+i), at)
		e.Topic = topic
		mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos", "erp")})
		m.ev[e.Seq], m.at[e.Seq] = app.EventName{Source: src, ID: e.ID, Topic: topic}, at
		ds := deliveries(t, s, e.Seq, 2)
		slices.SortFunc(ds, func(a, b *app.Delivery) int { return cmp.Compare(a.ID, b.ID) })
		for j, d := range ds {
			switch (i + j) % 3 {
			case 0:
				record(t, s, d.ID, &app.Attempt{Start: at, Status: 200}, app.Delivered, time.Time{})
				d.State = app.Delivered
			case 1:
				record(t, s, d.ID, &app.Attempt{Start: at, Status: 500, Error: "HTTP 500"}, app.Dead, time.Time{})
				d.State = app.Dead
			default:
				record(t, s, d.ID, &app.Attempt{Start: at, Status: 500, Error: "HTTP 500"}, app.Pending, at.Add(time.Hour))
			}
			m.ds = append(m.ds, d)
			m.ids = append(m.ids, d.ID)
		}
	}
	return m
}

// Replay by query: each filter narrows the match as the domain's rule
// says, a dry run changes nothing and counts what the real run replays,
// pending deliveries are never touched, the limit holds and says so, and
// the replayed ones are due at once in accept order.
func testReplayQuery(t *testing.T, open Opener) {
	s := open(t)
	m := storeReplayModel(t, s)
	now := T0.Add(24 * time.Hour)
	cases := []struct {
		name string
		q    app.ReplayQuery
	}{
		{"Any", app.ReplayQuery{Status: app.ReplayAny}},
		{"Dead", app.ReplayQuery{Status: app.ReplayDead}},
		{"Delivered", app.ReplayQuery{Status: app.ReplayDelivered}},
		{"Source", app.ReplayQuery{Source: "pay"}},
		{"TopicGlob", app.ReplayQuery{Source: "shop", Topic: "refunds/*"}},
		{"Destination", app.ReplayQuery{Destination: "erp"}},
		{"DeadToDestination", app.ReplayQuery{Destination: "pos", Status: app.ReplayDead}},
		{"DeadByTopic", app.ReplayQuery{Status: app.ReplayDead, Topic: "orders/*", Source: "shop"}},
		{"Since", app.ReplayQuery{Since: T0.Add(5 * time.Minute)}},
		{"Until", app.ReplayQuery{Until: T0.Add(3 * time.Minute)}},
		{"SinceUntil", app.ReplayQuery{Since: T0.Add(2 * time.Minute), Until: T0.Add(7 * time.Minute), Status: app.ReplayDead}},
		{"AfterEverything", app.ReplayQuery{Since: T0.Add(time.Hour)}},
		{"NoSuchSource", app.ReplayQuery{Source: "nope"}},
		{"OneDelivery", app.ReplayQuery{Delivery: m.ids[2]}},
		{"OneDeliveryDeadOnly", app.ReplayQuery{Delivery: m.ids[2], Status: app.ReplayDead}},
		{"OneDeliveryOtherSource", app.ReplayQuery{Delivery: m.ids[2], Source: "pay"}},
	}
	for _, tc := range cases {
		t.Run("DryRun"+tc.name, func(t *testing.T) {
			q := tc.q
			q.DryRun = true
			want := m.want(q)
			res, err := replayQuery(ctx, s, q, now)
			if err != nil {
				t.Fatal(err)
			}
			if res.Matched != len(want) || res.Replayed != 0 || res.More {
				t.Fatalf("dry run %+v = matched %d, replayed %d, more %v; want matched %d (%v), replayed 0", tc.q, res.Matched, res.Replayed, res.More, len(want), want)
			}
			// The pending ones the filters select are left alone, and
			// counted (issue 44), when the query asks for any state.
			if got, pending := res.Counts.PendingLeft, m.pending(q); got != pending {
				t.Fatalf("dry run %+v: %d pending left alone, want %d", tc.q, got, pending)
			}
			var first []uint64
			for _, it := range res.First {
				first = append(first, it.Delivery)
				if it.Event != m.ev[it.EventSeq] || it.State == app.Pending {
					t.Fatalf("item %+v: event %+v, want %+v", it, it.Event, m.ev[it.EventSeq])
				}
			}
			if w := want[:min(len(want), app.ReplayFirstShown)]; !slices.Equal(first, w) {
				t.Fatalf("first = %v, want %v", first, w)
			}
		})
	}
	t.Run("DryRunChangesNothing", func(t *testing.T) {
		if n, _ := s.CountDead(ctx); n != 8 {
			t.Fatalf("CountDead after dry runs = %d, want 8", n)
		}
	})
	t.Run("Limit", func(t *testing.T) {
		all := m.want(app.ReplayQuery{})
		res, err := replayQuery(ctx, s, app.ReplayQuery{Status: app.ReplayAny, DryRun: true, Limit: 5}, now)
		if err != nil || res.Matched != 5 || !res.More || len(res.First) != 5 || res.First[4].Delivery != all[4] {
			t.Fatalf("limit 5 = %+v, %v; want the first 5 of %v and more", res, err, all)
		}
		res, err = replayQuery(ctx, s, app.ReplayQuery{Status: app.ReplayAny, DryRun: true, Limit: len(all)}, now)
		if err != nil || res.Matched != len(all) || res.More {
			t.Fatalf("limit %d = %+v, %v; want all, no more", len(all), res, err)
		}
	})
	t.Run("BadStatus", func(t *testing.T) {
		if _, err := replayQuery(ctx, s, app.ReplayQuery{Status: "pending"}, now); app.ErrorCode(err) != app.EINVALID {
			t.Fatalf("status pending: %v, want an invalid-request error", err)
		}
	})
	t.Run("EventNames", func(t *testing.T) {
		seqs := []uint64{m.ds[0].EventSeq, m.ds[len(m.ds)-1].EventSeq, 987654}
		names, err := s.EventNames(ctx, seqs)
		if err != nil || len(names) != 2 || names[seqs[0]] != m.ev[seqs[0]] || names[seqs[1]] != m.ev[seqs[1]] {
			t.Fatalf("EventNames = %v, %v", names, err)
		}
	})

	for _, tc := range []struct {
		name string
		q    app.ReplayQuery
	}{
		{"ReplayShopSince", app.ReplayQuery{Source: "shop", Since: T0.Add(4 * time.Minute)}},
		{"ReplayDeadToERP", app.ReplayQuery{Destination: "erp", Status: app.ReplayDead}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			m := storeReplayModel(t, s)
			want := m.want(tc.q)
			dry := tc.q
			dry.DryRun = true
			d1, err := replayQuery(ctx, s, dry, now)
			if err != nil {
				t.Fatal(err)
			}
			res, err := replayQuery(ctx, s, tc.q, now)
			if err != nil {
				t.Fatal(err)
			}
			if res.Matched != d1.Matched || res.Replayed != d1.Matched || res.Matched != len(want) || res.Delivered != d1.Delivered {
				t.Fatalf("dry run %+v, real run %+v; want both %d matched, %d replayed", d1, res, len(want), len(want))
			}
			for _, d := range m.ds {
				got, _, err := s.Delivery(ctx, d.ID)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case slices.Contains(want, d.ID):
					if got.State != app.Pending || !got.Due.Equal(now) || got.Tries != 0 || got.Attempts != 1 {
						t.Fatalf("replayed delivery %d = %+v; want pending due %v with its attempt", d.ID, got, now)
					}
				case d.State == app.Pending:
					if got.State != app.Pending || !got.Due.Equal(m.at[d.EventSeq].Add(time.Hour)) || got.Tries != 1 {
						t.Fatalf("pending delivery %d was touched: %+v", d.ID, got)
					}
				case got.State != d.State:
					t.Fatalf("delivery %d not matched but now %v, was %v", d.ID, got.State, d.State)
				}
			}
			// Due now in accept order, per destination.
			for _, dest := range []string{"pos", "erp"} {
				work, _, err := s.DueDeliveries(ctx, dest, now, 100, Never)
				if err != nil {
					t.Fatal(err)
				}
				var got, wantDest []uint64
				for _, w := range work {
					if w.Delivery.Due.Equal(now) {
						got = append(got, w.Delivery.ID)
					}
				}
				for _, id := range want {
					if m.ds[slices.Index(m.ids, id)].Destination == dest {
						wantDest = append(wantDest, id)
					}
				}
				if !slices.Equal(got, wantDest) {
					t.Fatalf("%s due at now: %v, want %v in id order", dest, got, wantDest)
				}
			}
			// A second run finds what is still finished: nothing it replayed.
			again, err := replayQuery(ctx, s, tc.q, now)
			if err != nil || again.Matched != 0 || again.Replayed != 0 {
				t.Fatalf("second run = %+v, %v; want nothing left to replay", again, err)
			}
		})
	}

	t.Run("Batches", func(t *testing.T) {
		s := open(t)
		n := app.ReplayBatch + 7
		for i := range n {
			e := NewEvent("shop", fmt.Sprint("b", i), T0)
			mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
			d := deliveries(t, s, e.Seq, 1)[0]
			record(t, s, d.ID, &app.Attempt{Start: T0, Status: 500}, app.Dead, time.Time{})
		}
		res, err := replayQuery(ctx, s, app.ReplayQuery{Status: app.ReplayDead}, now)
		if err != nil || res.Matched != n || res.Replayed != n {
			t.Fatalf("replay of %d dead = %+v, %v", n, res, err)
		}
		if c, _ := s.CountDead(ctx); c != 0 {
			t.Fatalf("CountDead after = %d", c)
		}
	})
}

// A dry run and the run after it report the same numbers over a mixed set
// (delivered, dead and pending deliveries), forced or not, whatever the
// status: both read the store's candidates and decide by
// app.SelectReplay. Not forced, the run sends the dead ones and skips the
// delivered ones, as the dry run's split says; forced, every match goes.
// Issue 43: the dry run said "would replay 6" and the run then refused 5
// of them; issue 44: the two give the same split.
func testReplayDryRunAgrees(t *testing.T, open Opener) {
	now := T0.Add(24 * time.Hour)
	for _, force := range []bool{false, true} {
		for _, status := range []string{app.ReplayAny, app.ReplayDead, app.ReplayDelivered} {
			t.Run(fmt.Sprintf("%s/force=%v", status, force), func(t *testing.T) {
				s := open(t)
				m := storeReplayModel(t, s)
				q := app.ReplayQuery{Status: status, Source: "shop"}
				want := m.want(q)
				delivered := 0
				for _, id := range want {
					if m.ds[slices.Index(m.ids, id)].State == app.Delivered {
						delivered++
					}
				}
				split := app.ReplayCounts{DeadSent: len(want) - delivered, DeliveredSkipped: delivered, PendingLeft: m.pending(q)}
				selected, refused := len(want)-delivered, delivered
				if force {
					split = app.ReplayCounts{DeadSent: len(want) - delivered, DeliveredSent: delivered, PendingLeft: m.pending(q)}
					selected, refused = len(want), 0
				}
				if status == app.ReplayAny && split.PendingLeft == 0 {
					t.Fatal("the model has no pending delivery the query selects: the test says nothing of them")
				}
				svc := replay.Service{Store: s, Now: func() time.Time { return now }}
				dq := q
				dq.DryRun = true
				dry, err := svc.Replay(ctx, replay.Request{Query: dq, Force: force})
				if err != nil {
					t.Fatal(err)
				}
				run, err := svc.Replay(ctx, replay.Request{Query: q, Force: force})
				if err != nil {
					t.Fatal(err)
				}
				if dry.Matched != len(want) || dry.Delivered != delivered || dry.Selected != selected || dry.Refused != refused || dry.Replayed != 0 || dry.Counts != split {
					t.Fatalf("dry run %+v; want matched %d, delivered %d, selected %d, refused %d, split %+v", dry, len(want), delivered, selected, refused, split)
				}
				if run.Matched != dry.Matched || run.Delivered != dry.Delivered || run.Selected != dry.Selected || run.Refused != dry.Refused ||
					run.Replayed != dry.Selected || run.Counts != dry.Counts {
					t.Fatalf("dry run %+v, run %+v: they disagree", dry, run)
				}
				for _, d := range m.ds {
					got, _, err := s.Delivery(ctx, d.ID)
					if err != nil {
						t.Fatal(err)
					}
					replayed := slices.Contains(want, d.ID) && (force || d.State == app.Dead)
					if replayed != (got.State == app.Pending && got.Due.Equal(now)) {
						t.Fatalf("delivery %d (%v) is %v due %v after the run; replayed: %v", d.ID, d.State, got.State, got.Due, replayed)
					}
				}
			})
		}
	}
}
