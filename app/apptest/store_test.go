package apptest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/storage/bboltstore"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// roles is what the comparison asks of both stores.
type roles interface {
	app.IngestStore
	app.SweepStore
	LookupID(ctx context.Context, source, id string) (time.Time, uint64, bool, error)
	Counts(ctx context.Context) (ids, events int, err error)
}

// step is one call; it returns what the store answered, as text.
type step struct {
	name string
	do   func(s roles) string
}

func accept(source, id string, at time.Time, keep time.Duration, dests ...string) step {
	return step{fmt.Sprintf("Accept %s/%s at %v", source, id, at.Sub(t0)), func(s roles) string {
		e := &app.Event{Source: source, ID: id, Topic: "t", ReceivedAt: at, Body: []byte(id)}
		var plan *app.Plan
		if len(dests) > 0 {
			plan = &app.Plan{Direct: app.DirectTo(dests...)}
		}
		dup, err := s.Accept(context.Background(), e, at.Add(keep), plan)
		return fmt.Sprint(dup, err)
	}}
}

func forget(at time.Duration, limit int) step {
	return step{fmt.Sprintf("ForgetExpiredIDs %v %d", at, limit), func(s roles) string {
		n, err := s.ForgetExpiredIDs(context.Background(), t0.Add(at), limit)
		return fmt.Sprint(n, err)
	}}
}

func deleteBefore(at time.Duration, limit int) step {
	return step{fmt.Sprintf("DeleteEventsBefore %v %d", at, limit), func(s roles) string {
		n, err := s.DeleteEventsBefore(context.Background(), t0.Add(at), limit)
		return fmt.Sprint(n, err)
	}}
}

func lookup(source, id string) step {
	return step{"LookupID " + source + "/" + id, func(s roles) string {
		exp, _, ok, err := s.LookupID(context.Background(), source, id)
		return fmt.Sprint(exp.Sub(t0), ok, err)
	}}
}

var counts = step{"Counts", func(s roles) string {
	ids, events, err := s.Counts(context.Background())
	return fmt.Sprint(ids, events, err)
}}

// TestStore_AsBbolt runs the same calls on Store and on a bbolt store and
// wants the same answers: duplicates while an id is unexpired, an expired
// id accepted again before and after the sweep, the sweep's limits and
// order, events with a delivery kept.
func TestStore_AsBbolt(t *testing.T) {
	h := time.Hour
	tests := map[string][]step{
		"Duplicates": {
			accept("shop", "a", t0, 24*h), accept("shop", "a", t0.Add(h), 24*h), accept("erp", "a", t0, 24*h),
			accept("shop", "a", t0.Add(24*h-time.Nanosecond), 24*h), lookup("shop", "a"), lookup("shop", "b"), counts,
		},
		"ExpiredAcceptedAgain": {
			accept("shop", "a", t0, h), accept("shop", "a", t0.Add(h), h), lookup("shop", "a"), counts,
			accept("shop", "a", t0.Add(90*time.Minute), h), forget(2*h, 10), lookup("shop", "a"), counts,
			forget(3*h, 10), lookup("shop", "a"), counts, accept("shop", "a", t0.Add(3*h), h), counts,
		},
		"ForgetInChunks": {
			accept("s", "1", t0, h), accept("s", "2", t0, 2*h), accept("s", "3", t0, 3*h), accept("s", "4", t0, 4*h),
			forget(0, 10), forget(3*h, 2), lookup("s", "1"), lookup("s", "2"), lookup("s", "3"), forget(3*h, 2),
			lookup("s", "3"), lookup("s", "4"), counts,
		},
		"DeleteKeepsRouted": {
			accept("s", "1", t0, h), accept("s", "2", t0.Add(time.Minute), h, "erp"), accept("s", "3", t0.Add(2*time.Minute), h),
			accept("s", "4", t0.Add(10*h), h), deleteBefore(0, 10), deleteBefore(time.Hour, 1), counts,
			deleteBefore(time.Hour, 10), counts, deleteBefore(11*h, 10), counts,
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			db, err := bboltstore.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			mem := apptest.NewStore()
			for i, st := range steps {
				if got, want := st.do(mem), st.do(db); got != want {
					t.Fatalf("step %d, %s: apptest.Store = %s, bbolt = %s", i, st.name, got, want)
				}
			}
		})
	}
}

// A done ctx stops every call with its error and stores nothing, as it
// does on the real stores (storetest's Cancelled).
func TestStore_Cancelled(t *testing.T) {
	s := apptest.NewStore()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	e := &app.Event{Source: "s", ID: "1", ReceivedAt: t0}
	if _, err := s.Accept(done, e, t0.Add(time.Hour), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Accept = %v; want context.Canceled", err)
	}
	if _, err := s.ForgetExpiredIDs(done, t0, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("ForgetExpiredIDs = %v; want context.Canceled", err)
	}
	if _, _, err := s.Counts(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Counts = %v; want context.Canceled", err)
	}
	if ids, events, _ := s.Counts(context.Background()); ids != 0 || events != 0 {
		t.Fatalf("Counts after a cancelled Accept = %d, %d; want 0, 0", ids, events)
	}
}

// Writes after Close fail; a debounced plan is refused, not half done.
func TestStore_ClosedAndDebounce(t *testing.T) {
	s := apptest.NewStore()
	ctx := context.Background()
	e := &app.Event{Source: "s", ID: "1", ReceivedAt: t0}
	if _, err := s.Accept(ctx, e, t0.Add(time.Hour), &app.Plan{Debounce: []*app.DebounceOp{{}}}); !errors.Is(err, apptest.ErrDebounce) {
		t.Fatalf("Accept of a debounced plan = %v; want ErrDebounce", err)
	}
	s.Close()
	if _, err := s.Accept(ctx, e, t0.Add(time.Hour), nil); !errors.Is(err, apptest.ErrClosed) {
		t.Fatalf("Accept after Close = %v; want ErrClosed", err)
	}
	if ids, events, _ := s.Counts(ctx); ids != 0 || events != 0 {
		t.Fatalf("Counts = %d, %d; want 0, 0", ids, events)
	}
}
