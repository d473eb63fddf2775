package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
)

// SearchTimer is a store whose body search has a time budget the suite
// can shorten (both stores).
type SearchTimer interface {
	SetSearchTime(time.Duration)
}

// nearMisses is a 1 MiB body that the worst-case search text
// (worstSearch) almost matches everywhere: runs of 1,000 'a' then "b ",
// so it holds every trigram of the text (PostgreSQL's index lets it
// through) and a naive matcher compares ~1,000 bytes at each place.
var nearMisses = strings.Repeat(strings.Repeat("a", 1000)+"b ", (1<<20)/1002)

// worstSearch is the red team's search text (issue 42): 1,023 'a' then 'b'.
var worstSearch = strings.Repeat("a", app.MaxSearch-1) + "b"

// testSearchBounds (issue 42): a body search and a replay by query's
// dry run over large bodies stop when their caller leaves, a search
// stops at its time budget and says so, and a replay's dry run selects
// what its run replays, at most its limit, saying more remain.
func testSearchBounds(t *testing.T, open Opener) {
	s := open(t)
	var seqs []uint64
	for i := range 4 {
		e := NewEvent("shop", fmt.Sprintf("big-%d", i), T0.Add(time.Duration(i)*time.Minute))
		e.Body = []byte(nearMisses)
		mustAccept(t, s, e, &app.Plan{Direct: app.DirectTo("pos")})
		d := deliveries(t, s, e.Seq, 1)[0]
		record(t, s, d.ID, &app.Attempt{Start: e.ReceivedAt, Status: 500, Error: "HTTP 500"}, app.Dead, time.Time{})
		seqs = append(seqs, e.Seq)
	}
	t.Run("CallerLeaves", func(t *testing.T) {
		if st, ok := s.(SearchTimer); ok {
			st.SetSearchTime(time.Hour)
			defer st.SetSearchTime(0)
		}
		for _, tt := range []struct {
			name string
			run  func(ctx context.Context) error
		}{
			{"SearchEvents", func(ctx context.Context) error {
				_, err := s.SearchEvents(ctx, app.EventQuery{Q: worstSearch})
				return err
			}},
			{"ReplayQuery dry run", func(ctx context.Context) error {
				_, err := replayQuery(ctx, s, app.ReplayQuery{Q: worstSearch, DryRun: true}, T0)
				return err
			}},
		} {
			ctx := leaveAfterFirstLook(t)
			if err := tt.run(ctx); !errors.Is(err, context.Canceled) {
				t.Errorf("%s whose caller left = %v; want context.Canceled", tt.name, err)
			}
		}
	})
	t.Run("StopsAtItsTime", func(t *testing.T) {
		st, ok := s.(SearchTimer)
		if !ok {
			t.Skip("the store has no search budget")
		}
		st.SetSearchTime(time.Nanosecond)
		defer st.SetSearchTime(0)
		res, err := s.SearchEvents(ctx, app.EventQuery{Q: worstSearch})
		if err != nil || !res.Stopped || len(res.Rows) != 0 {
			t.Fatalf("SearchEvents past its time = %+v, %v; want stopped, no rows", res, err)
		}
		if !res.SearchedUntil.IsZero() && (res.Searched >= len(seqs) || res.Next == 0) {
			t.Errorf("SearchEvents past its time searched %d of %d events, next %d; want it to stop early and go on", res.Searched, len(seqs), res.Next)
		}
	})
	t.Run("ReplayLimit", func(t *testing.T) {
		q := app.ReplayQuery{Q: "aaab", Status: app.ReplayDead, Limit: 3, DryRun: true}
		dry, err := replayQuery(ctx, s, q, T0)
		if err != nil {
			t.Fatal(err)
		}
		q.DryRun = false
		run, err := replayQuery(ctx, s, q, T0.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		ids := func(res app.ReplayResult) []uint64 {
			var out []uint64
			for _, it := range res.First {
				out = append(out, it.EventSeq)
			}
			return out
		}
		if want := seqs[:3]; !slices.Equal(ids(dry), want) || !dry.More || dry.Matched != 3 ||
			!slices.Equal(ids(run), want) || !run.More || run.Replayed != 3 {
			t.Fatalf("dry run %v (%+v), run %v (%+v); want both %v, more remaining, 3 replayed", ids(dry), dry, ids(run), run, want)
		}
	})
}

// leaveAfterFirstLook is a context whose caller leaves once the store has
// looked at it once (the look before a store starts its read): Err says
// Canceled from the second look on, and Done closes 200 ms after the
// start, for a store that waits on Done (PostgreSQL's query cancel).
func leaveAfterFirstLook(t *testing.T) context.Context {
	c, cancel := context.WithCancel(context.Background())
	stop := time.AfterFunc(200*time.Millisecond, cancel)
	t.Cleanup(func() { stop.Stop(); cancel() })
	return &leaving{Context: c}
}

type leaving struct {
	context.Context
	looks atomic.Int32
}

func (l *leaving) Err() error {
	if l.looks.Add(1) > 1 {
		return context.Canceled
	}
	return l.Context.Err()
}
