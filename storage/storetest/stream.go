package storetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"hookbox/app"
)

// testEventsAfter: the stream's read returns whole events above a seq,
// ascending, at most limit, whatever the source, and nothing past the end.
func testEventsAfter(t *testing.T, open Opener) {
	s := open(t)
	if es, err := s.EventsAfter(ctx, 0, 10, 1<<20); err != nil || len(es) != 0 {
		t.Fatalf("EventsAfter on an empty store = %d events, %v; want none", len(es), err)
	}
	var in []*app.Event
	for i := range 7 {
		src := "shop"
		if i%2 == 1 {
			src = "stripe"
		}
		e := NewEvent(src, fmt.Sprintf("evt_%d", i), T0.Add(time.Duration(i)*time.Second))
		e.Body = append([]byte{0, 0xff, byte(i)}, e.Body...)
		var plan *app.Plan
		if i == 3 {
			plan = &app.Plan{Direct: app.DirectTo("erp")} // routed or not alike
		}
		mustAccept(t, s, e, plan)
		in = append(in, e)
	}
	same := func(t *testing.T, got, want []*app.Event) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %d events, want %d", len(got), len(want))
		}
		for i, g := range got {
			w := want[i]
			if g.Seq != w.Seq || g.Source != w.Source || g.ID != w.ID || g.Topic != w.Topic || !g.ReceivedAt.Equal(w.ReceivedAt) ||
				string(g.Body) != string(w.Body) || !slices.Equal(g.Header, w.Header) {
				t.Fatalf("event %d = %+v, want %+v", i, g, w)
			}
		}
	}
	t.Run("All", func(t *testing.T) {
		got, err := s.EventsAfter(ctx, 0, 100, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		same(t, got, in)
	})
	t.Run("PagesOn", func(t *testing.T) {
		var got []*app.Event
		after := uint64(0)
		for {
			page, err := s.EventsAfter(ctx, after, 3, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) > 3 {
				t.Fatalf("a page of limit 3 holds %d events", len(page))
			}
			if len(page) == 0 {
				break
			}
			got = append(got, page...)
			after = page[len(page)-1].Seq
		}
		same(t, got, in)
	})
	t.Run("BytesBound", func(t *testing.T) {
		// A page stops after the body that takes it to maxBytes: the first
		// always comes, however large.
		size := len(in[0].Body)
		got, err := s.EventsAfter(ctx, 0, 100, 2*size-1)
		if err != nil {
			t.Fatal(err)
		}
		same(t, got, in[:2])
		if got, err = s.EventsAfter(ctx, 0, 100, 1); err != nil {
			t.Fatal(err)
		}
		same(t, got, in[:1])
	})
	t.Run("AfterOne", func(t *testing.T) {
		got, err := s.EventsAfter(ctx, in[2].Seq, 2, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		same(t, got, in[3:5])
	})
	t.Run("PastTheEnd", func(t *testing.T) {
		if es, err := s.EventsAfter(ctx, in[6].Seq, 10, 1<<20); err != nil || len(es) != 0 {
			t.Fatalf("EventsAfter(last) = %d events, %v; want none", len(es), err)
		}
		if es, err := s.EventsAfter(ctx, 0, 0, 1<<20); err != nil || len(es) != 0 {
			t.Fatalf("EventsAfter with limit 0 = %d events, %v; want none", len(es), err)
		}
	})
	t.Run("Deleted", func(t *testing.T) {
		// Events swept by retention are gone from the stream too.
		if _, err := s.DeleteEventsBefore(ctx, T0.Add(2*time.Second), 100); err != nil {
			t.Fatal(err)
		}
		got, err := s.EventsAfter(ctx, 0, 100, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		same(t, got, in[2:])
	})
}
