package bboltstore

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/storetest"
)

var intakeT0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// A plan of each kind the log must keep: direct deliveries with a route
// and an order key, a debounced route with a rate limit, the unkeyed and
// filtered notes.
func intakePlan(i int) *app.Plan {
	switch i % 4 {
	case 0:
		return nil
	case 1:
		return &app.Plan{Direct: []app.Direct{{Dest: "erp", Route: "orders", OrderKey: fmt.Sprint("c", i%7)}, {Dest: "pos"}}}
	case 2:
		return &app.Plan{Debounce: []*app.DebounceOp{{Route: "customers", Key: fmt.Sprint("k", i%5), Delay: 10 * time.Second,
			Limit: 2, Window: time.Minute, To: []string{"crm", "mail"}, OrderKey: "g"}}, Unkeyed: []string{"nokey"}}
	default:
		return &app.Plan{Filtered: []app.FilterNote{{Route: "big", Err: ""}, {Route: "bad", Err: "no such field"}}}
	}
}

func TestLogRecord_RoundTrip(t *testing.T) {
	for i := range 4 {
		e := idsEvent(fmt.Sprint("evt_", i), intakeT0)
		l := &logged{seq: uint64(7 + i), key: idKey(e.Source, e.ID), exp: intakeT0.Add(time.Hour).UnixNano(),
			rec: packEvent(e, zstdEncoder()), plan: intakePlan(i)}
		b := appendRecord([]byte("before"), 42, l)
		got, file, n, ok := readRecord(b[len("before"):])
		if !ok || file != 42 || n != len(b)-len("before") {
			t.Fatalf("plan %d: read back ok %v, %d bytes of %d", i, ok, n, len(b)-len("before"))
		}
		want := l.plan
		if want == nil {
			want = &app.Plan{}
		}
		if got.seq != l.seq || got.exp != l.exp || string(got.key) != string(l.key) || string(got.rec) != string(l.rec) || !reflect.DeepEqual(got.plan, want) {
			t.Fatalf("plan %d: read back %+v, want %+v", i, got, l)
		}
		if got.head.Source != "shop" || got.head.ID != e.ID || !got.head.ReceivedAt.Equal(intakeT0) {
			t.Fatalf("plan %d: head %+v", i, got.head)
		}
		// Torn anywhere, or one bit flipped: not a record.
		for cut := range len(b) - len("before") {
			if _, _, _, ok := readRecord(b[len("before") : len("before")+cut]); ok {
				t.Fatalf("plan %d: a record cut to %d bytes reads", i, cut)
			}
		}
		flipped := append([]byte(nil), b[len("before"):]...)
		flipped[len(flipped)/2] ^= 1
		if _, _, _, ok := readRecord(flipped); ok {
			t.Fatalf("plan %d: a record with a bit flipped reads", i)
		}
	}
}

// The log's reader takes any bytes: a torn or foreign file ends the log,
// it never panics nor allocates past what it is given.
func FuzzReadRecord(f *testing.F) {
	for i := range 4 {
		e := idsEvent(fmt.Sprint("evt_", i), intakeT0)
		f.Add(appendRecord(nil, 1, &logged{seq: 1, key: idKey(e.Source, e.ID), rec: encodeEvent(e), plan: intakePlan(i)}))
	}
	f.Add([]byte{0, 0, 0, 9, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		l, _, n, ok := readRecord(b)
		if ok && (n > len(b) || l == nil || l.plan == nil) {
			t.Fatalf("read %d of %d bytes, %+v", n, len(b), l)
		}
	})
}

// The cut between the log's sync and its apply: the events answered are
// in the log and not in the data file (the committer held), and the data
// directory is taken as it stands (a crash). Open applies them: every
// answered event is there under the seq it was answered with, with its
// deliveries and debounce steps, its id a duplicate, and the log is empty
// again.
func TestIntake_CutBetweenLogAndApply(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir)
	ctx := context.Background()
	if _, err := db.Accept(ctx, idsEvent("applied", intakeT0), intakeT0.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	settle(t, db)
	db.gate.Lock() // the committer waits here: nothing more reaches the data file
	const n = 300
	seqs := make([]uint64, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := range n {
		wg.Go(func() {
			at := intakeT0.Add(time.Duration(i) * time.Millisecond)
			e := idsEvent(fmt.Sprint("evt_", i), at)
			dup, err := db.Accept(ctx, e, at.Add(time.Hour), intakePlan(i))
			if err == nil && dup {
				err = fmt.Errorf("evt_%d: a duplicate", i)
			}
			if err == nil {
				// Sent again before it is applied: the tail answers.
				if dup, err = db.Accept(ctx, idsEvent(fmt.Sprint("evt_", i), at), at.Add(time.Hour), nil); err == nil && !dup {
					err = fmt.Errorf("evt_%d accepted twice while in the tail", i)
				}
			}
			mu.Lock()
			seqs[i] = e.Seq
			if err != nil {
				errs = append(errs, err)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	crashed := t.TempDir()
	for _, name := range []string{FileName, logNames[0], logNames[1]} {
		copyFile(t, filepath.Join(dir, name), filepath.Join(crashed, name))
	}
	if fi, _ := os.Stat(filepath.Join(crashed, logNames[0])); fi.Size() == 0 {
		t.Fatal("nothing in the log at the cut")
	}
	db.gate.Unlock()
	db.Close()

	// The same log beside another data file (one put in its place): not
	// its records, none is taken.
	other := t.TempDir()
	openT(t, other).Close()
	for _, name := range logNames {
		os.Remove(filepath.Join(other, name))
		copyFile(t, filepath.Join(crashed, name), filepath.Join(other, name))
	}
	if o := openT(t, other); true {
		ids, events, err := o.Counts(ctx)
		o.Close()
		if err != nil || ids != 0 || events != 0 {
			t.Fatalf("another data file took the log's records: %d ids, %d events, %v", ids, events, err)
		}
	}

	re := openT(t, crashed)
	defer re.Close()
	if ids, events, err := re.Counts(ctx); err != nil || ids != n+1 || events != n+1 {
		t.Fatalf("after the cut: %d ids, %d events, %v; want %d", ids, events, err, n+1)
	}
	for i, seq := range seqs {
		e, err := re.Event(ctx, seq)
		if err != nil || e == nil || e.ID != fmt.Sprint("evt_", i) {
			t.Fatalf("seq %d answered for evt_%d: %+v, %v", seq, i, e, err)
		}
		dls, err := re.EventDeliveries(ctx, seq)
		want := 0
		if p := intakePlan(i); p != nil {
			want = len(p.Direct)
		}
		if err != nil || len(dls) != want {
			t.Fatalf("evt_%d: %d deliveries, %v; want %d", i, len(dls), err, want)
		}
		if dup, err := re.Accept(ctx, idsEvent(fmt.Sprint("evt_", i), intakeT0), intakeT0.Add(time.Hour), nil); err != nil || !dup {
			t.Fatalf("evt_%d after the cut: duplicate %v, %v", i, dup, err)
		}
	}
	if pending, err := re.PendingCount(ctx); err != nil || pending != 5 {
		t.Fatalf("debounced: %d pending, %v; want 5 (one per key)", pending, err)
	}
	for _, name := range logNames {
		if fi, err := os.Stat(filepath.Join(crashed, name)); err != nil || fi.Size() != 0 {
			t.Fatalf("%s after Open: %v, %v; want empty", name, fi.Size(), err)
		}
	}
	if err := re.Check(); err != nil {
		t.Fatal(err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// Start after a crash that left a long tail: the log holds 100,000
// answered events (10,000 under -race) that the data file does not, as
// the intake writes them. Open applies them all, in commits of applyMax,
// and says how long it took (docs/BENCHMARKS.md). In service the tail is
// at most maxTail long.
func TestIntake_ReplayAtStart(t *testing.T) {
	n := 100_000
	if raceEnabled {
		n = 10_000
	}
	dir := t.TempDir()
	first := openT(t, dir) // the data file, and its log id
	file := first.logID
	first.Close()
	var b []byte
	enc := zstdEncoder()
	for i := range n {
		at := intakeT0.Add(time.Duration(i) * time.Millisecond)
		e := storetest.NewEvent("shop", fmt.Sprint("order-", i), at)
		e.Body = storetest.ShopifyOrder(i)
		b = appendRecord(b, file, &logged{seq: uint64(i + 1), key: idKey(e.Source, e.ID), exp: at.Add(time.Hour).UnixNano(),
			rec: packEvent(e, enc), plan: intakePlan(i % 2)})
	}
	if err := os.WriteFile(filepath.Join(dir, logNames[0]), b, 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	db := openT(t, dir)
	took := time.Since(start)
	defer db.Close()
	t.Logf("Open applied %d logged events (%.1f MB of log) in %v", n, float64(len(b))/1e6, took.Round(time.Millisecond))
	ctx := context.Background()
	if ids, events, err := db.Counts(ctx); err != nil || ids != n || events != n {
		t.Fatalf("after the replay: %d ids, %d events, %v; want %d", ids, events, err, n)
	}
	if dls, err := db.EventDeliveries(ctx, uint64(n)); err != nil || len(dls) != 2 {
		t.Fatalf("the last event's deliveries: %d, %v; want 2", len(dls), err)
	}
}
