package storetest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"hookbox/app"
)

// quarantined is a refused request of source from client at at, with a
// signature header and a body that a re-encoding would change.
func quarantined(source, client string, at time.Time, body string) *app.Quarantined {
	return &app.Quarantined{Source: source, At: at, Client: client, Reason: "signature does not match",
		Header: []app.HeaderField{{Name: "X-Hub-Signature-256", Value: "sha256=00"}, {Name: "X-GitHub-Delivery", Value: body}},
		Body:   []byte(`{"a/b": "<c> & ` + body + `"}` + "\n")}
}

// testQuarantine: kept requests come back byte-exact, per source, oldest
// first and paged; the bounds hold (requests, bytes, one address's share,
// age) with the oldest of the fullest address out first; delete by id,
// clear, and the sweep's delete by age.
func testQuarantine(t *testing.T, open Opener) {
	s := open(t)
	lim := app.QuarantineLimits{Requests: 20, Bytes: 1 << 20, Keep: time.Hour}
	keep := func(qs ...*app.Quarantined) []bool {
		t.Helper()
		kept, err := s.KeepQuarantined(ctx, qs, lim)
		if err != nil {
			t.Fatal(err)
		}
		return kept
	}
	list := func(source string) []app.Quarantined {
		t.Helper()
		var all []app.Quarantined
		var after uint64
		for {
			page, err := s.Quarantined(ctx, source, after, 3)
			if err != nil {
				t.Fatal(err)
			}
			if len(page) == 0 {
				return all
			}
			all = append(all, page...)
			after = page[len(page)-1].ID
		}
	}

	t.Run("RoundTrip", func(t *testing.T) {
		a := quarantined("gh", "10.0.0.1", T0, "one")
		b := quarantined("gh", "10.0.0.2", T0.Add(time.Second), "two")
		other := quarantined("shop", "10.0.0.1", T0, "three")
		if got := keep(a, b, other); !got[0] || !got[1] || !got[2] {
			t.Fatalf("kept %v; want all", got)
		}
		if a.ID == 0 || b.ID <= a.ID {
			t.Fatalf("ids %d, %d; want increasing from 1", a.ID, b.ID)
		}
		got := list("gh")
		if len(got) != 2 {
			t.Fatalf("gh holds %d; want 2", len(got))
		}
		for i, want := range []*app.Quarantined{a, b} {
			g := got[i]
			if g.ID != want.ID || g.Source != "gh" || !g.At.Equal(want.At) || g.Client != want.Client || g.Reason != want.Reason ||
				!bytes.Equal(g.Body, want.Body) || fmt.Sprint(g.Header) != fmt.Sprint(want.Header) {
				t.Errorf("entry %d = %+v; want %+v", i, g, *want)
			}
		}
		n, size, err := s.QuarantineUsage(ctx, "gh")
		if err != nil || n != 2 || size != a.Size()+b.Size() {
			t.Errorf("usage = %d, %d, %v; want 2, %d", n, size, err, a.Size()+b.Size())
		}
		if d, err := s.DeleteQuarantined(ctx, "gh", []uint64{a.ID, other.ID}); err != nil || d != 1 {
			t.Errorf("delete a and another source's id = %d, %v; want 1 (only gh's)", d, err)
		}
		if got := list("gh"); len(got) != 1 || got[0].ID != b.ID {
			t.Errorf("gh after delete = %v; want b", got)
		}
		if d, err := s.DeleteQuarantined(ctx, "gh", nil); err != nil || d != 1 {
			t.Errorf("clear = %d, %v; want 1", d, err)
		}
		if got := list("shop"); len(got) != 1 {
			t.Errorf("clearing gh left shop %d; want 1", len(got))
		}
	})

	t.Run("Bounds", func(t *testing.T) {
		// Ten addresses with one each, then one address floods: it keeps
		// its share (2 of 20) and pushes nobody out.
		at := T0.Add(time.Minute)
		for i := range 10 {
			keep(quarantined("b", fmt.Sprintf("10.1.0.%d", i), at, fmt.Sprint(i)))
		}
		var flood []*app.Quarantined
		for i := range 50 {
			flood = append(flood, quarantined("b", "10.9.9.9", at.Add(time.Duration(i)*time.Second), fmt.Sprint("f", i)))
		}
		kept := keep(flood...)
		if n := count(kept); n != 2 {
			t.Errorf("the flooding address kept %d; want its share, 2", n)
		}
		got := list("b")
		if len(got) != 12 {
			t.Fatalf("holds %d; want 12", len(got))
		}
		// Fill it from many addresses: once full, the oldest of the
		// address that holds the most goes first.
		for i := range 8 {
			keep(quarantined("b", fmt.Sprintf("10.2.0.%d", i), at.Add(time.Minute), fmt.Sprint("g", i)))
		}
		if n, _, _ := s.QuarantineUsage(ctx, "b"); n != 20 {
			t.Fatalf("holds %d; want 20, full", n)
		}
		keep(quarantined("b", "10.3.0.1", at.Add(2*time.Minute), "new"))
		got = list("b")
		if len(got) != 20 {
			t.Fatalf("holds %d; want 20 still", len(got))
		}
		flooded := 0
		for _, q := range got {
			if q.Client == "10.9.9.9" {
				flooded++
			}
		}
		if flooded != 1 || got[len(got)-1].Client != "10.3.0.1" {
			t.Errorf("the full quarantine made room from %d left of the flood, newest %s; want the flood's oldest out", flooded, got[len(got)-1].Client)
		}
		// Too large for one address's share of the bytes: refused.
		big := quarantined("b", "10.4.0.1", at.Add(3*time.Minute), string(make([]byte, lim.Bytes/10)))
		if keep(big)[0] {
			t.Error("a request larger than one address's share was kept")
		}
		// Old ones go first when they are past Keep, and the sweep deletes
		// them too.
		keep(quarantined("b", "10.5.0.1", at.Add(lim.Keep+30*time.Second), "late"))
		if n, _, _ := s.QuarantineUsage(ctx, "b"); n != 10 {
			t.Errorf("after an hour holds %d; want 10 (the first ten and the flood's out)", n)
		}
		d, err := s.DeleteQuarantinedBefore(ctx, at.Add(90*time.Second), 100)
		if err != nil || d != 9 { // the 8 of b's, and shop's of RoundTrip: every source
			t.Errorf("DeleteQuarantinedBefore = %d, %v; want 9", d, err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		// Many writers at once never take a source past its bound.
		small := app.QuarantineLimits{Requests: 10, Bytes: 1 << 20, Keep: time.Hour}
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				q := quarantined("c", fmt.Sprintf("10.6.0.%d", i), T0.Add(time.Duration(i)*time.Millisecond), fmt.Sprint(i))
				if _, err := s.KeepQuarantined(ctx, []*app.Quarantined{q}, small); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if n, _, _ := s.QuarantineUsage(ctx, "c"); n != 10 {
			t.Errorf("holds %d; want 10", n)
		}
	})
}

func count(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}
