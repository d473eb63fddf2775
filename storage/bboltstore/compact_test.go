package bboltstore_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

// After the sweep deletes most events, a compaction gives the space back:
// the file ends within 1.5 times its live data, and holds every key it
// held (events, deliveries, remembered ids, sessions, counts, sequences),
// compared bucket by bucket. A second compaction runs while writers
// accept events and readers read: every accepted event is there after it,
// no read fails, and its last round found the copy equal to the file.
func TestCompact_ShopifyOrders(t *testing.T) {
	bboltstore.CheckCompactions(t)
	orders := bboltstore.ShopifyOrders(t)
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	ctx := context.Background()
	const n = 4000
	plan := &app.Plan{Direct: []app.Direct{{Dest: "shop-backend", Route: "orders"}}}
	inParallel(t, n, func(i int) error {
		at := t0.Add(time.Duration(i) * time.Second)
		var p *app.Plan
		if i%100 == 0 {
			p = plan // a pending delivery: the sweep keeps its event
		}
		_, err := db.Accept(ctx, shopifyEvent(orders, i, at), at.Add(time.Hour), p)
		return err
	})
	for i := range 20 {
		s := app.Session{Hash: sha256.Sum256([]byte(fmt.Sprint(i))), ID: app.Identity{Name: "admin"}, Created: t0, Expires: t0.Add(time.Hour)}
		if err := db.CreateSession(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	kept := n / 10
	sweep := func(before time.Time) {
		for {
			k, err := db.DeleteEventsBefore(ctx, before, 500)
			if err != nil {
				t.Fatal(err)
			}
			if k == 0 {
				return
			}
		}
	}
	sweep(t0.Add(time.Duration(n-kept) * time.Second))
	db.Settle() // and the dictionary trained: nothing writes from here on
	want := db.Dump()
	file := fileBytes(t, dir)
	c, ran, err := db.CompactIfSparse(ctx)
	if err != nil || !ran {
		t.Fatalf("compact: ran %v, %v", ran, err)
	}
	live := liveBytes(db)
	t.Logf("compacted with no writes: %d → %d bytes (file measured %d), live data %d, %d rounds, pause %v, took %v",
		c.Before, c.After, file, live, c.Rounds, c.Pause, c.Took)
	if got := fileBytes(t, dir); got > int64(live)*3/2+64<<10 {
		t.Errorf("data file %d bytes after the compaction; want at most 1.5× the live data (%d) and 64 KiB", got, live)
	}
	if diff := bboltstore.DiffDumps(want, db.Dump()); diff != "" {
		t.Fatalf("the compacted file differs: %s", diff)
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}

	// Again, with writers and readers going on.
	inParallel(t, n, func(i int) error {
		at := t0.Add(time.Duration(n+i) * time.Second)
		_, err := db.Accept(ctx, shopifyEvent(orders, n+i, at), at.Add(time.Hour), nil)
		return err
	})
	sweep(t0.Add(time.Duration(2*n-kept) * time.Second))
	var (
		stop     atomic.Bool
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted []*app.Event
		failed   atomic.Value
	)
	for w := range 4 {
		wg.Add(2)
		go func() { // a writer
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				k := 2*n + w*1_000_000 + i
				at := t0.Add(time.Duration(k) * time.Second)
				e := shopifyEvent(orders, k, at)
				if _, err := db.Accept(ctx, e, at.Add(time.Hour), plan); err != nil {
					failed.Store(err)
					return
				}
				mu.Lock()
				accepted = append(accepted, e)
				mu.Unlock()
			}
		}()
		go func() { // a reader
			defer wg.Done()
			for !stop.Load() {
				if _, _, err := db.Counts(ctx); err != nil {
					failed.Store(err)
					return
				}
				if _, err := db.Event(ctx, uint64(2*n-1)); err != nil {
					failed.Store(err)
					return
				}
			}
		}()
	}
	c, err = db.Compact(ctx)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("a write or read during the compaction: %v", err)
	}
	t.Logf("compacted under load: %d → %d bytes, %d rounds, pause %v, took %v; %d events accepted meanwhile",
		c.Before, c.After, c.Rounds, c.Pause, c.Took, len(accepted))
	if len(accepted) == 0 {
		t.Fatal("no event accepted during the compaction")
	}
	want = db.Dump()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = mustOpenDir(t, dir)
	if diff := bboltstore.DiffDumps(want, db.Dump()); diff != "" {
		t.Fatalf("reopened, the file differs: %s", diff)
	}
	for _, e := range accepted {
		if _, seq, ok, err := db.LookupID(ctx, e.Source, e.ID); !ok || err != nil {
			t.Fatalf("event %s accepted during the compaction is not remembered: %v", e.ID, err)
		} else if got, err := db.Event(ctx, seq); err != nil || got == nil || string(got.Body) != string(e.Body) {
			t.Fatalf("event %s accepted during the compaction: %v, %v", e.ID, got, err)
		}
	}
	if err := db.Check(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, bboltstore.FileName+".compact")); !os.IsNotExist(err) {
		t.Fatalf("the compaction's copy is left: %v", err)
	}
}

func fileBytes(tb testing.TB, dir string) int64 {
	fi, err := os.Stat(filepath.Join(dir, bboltstore.FileName))
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size()
}

func liveBytes(db *bboltstore.DB) int {
	var live int
	for _, b := range db.PageStats().Buckets {
		live += b.Inuse
	}
	return live
}

// A process killed at any point of a compaction leaves a data file that
// opens, passes bbolt's check and holds every event it acknowledged: the
// old file or the complete new one, never a half one; the copy it left is
// removed at open. The child compacts in a loop while it accepts events,
// and is killed after a different number of compactions each time.
func TestCompact_KilledMidway(t *testing.T) {
	if dir := os.Getenv("HOOKBOX_COMPACT_CHILD"); dir != "" {
		compactChild(t, dir)
		return
	}
	orders := bboltstore.ShopifyOrders(t)
	dir := t.TempDir()
	db := mustOpenDir(t, dir)
	ctx := context.Background()
	inParallel(t, 2000, func(i int) error {
		at := t0.Add(time.Duration(i) * time.Second)
		_, err := db.Accept(ctx, shopifyEvent(orders, i, at), at.Add(time.Hour), nil)
		return err
	})
	if _, err := db.DeleteEventsBefore(ctx, t0.Add(1800*time.Second), 2000); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompact_KilledMidway$")
		cmd.Env = append(os.Environ(), "HOOKBOX_COMPACT_CHILD="+dir, fmt.Sprint("HOOKBOX_COMPACT_ROUND=", round))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Killed once compaction round+1 began and then 3×round more
		// events were acknowledged: at a different point of it each time.
		var acked []string
		compactions, after := 0, -1
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if id, ok := strings.CutPrefix(line, "acked "); ok {
				acked = append(acked, id)
				if after >= 0 {
					after++
				}
			} else if line == "compact" {
				if compactions++; compactions == round+1 {
					after = 0
				}
			} else {
				t.Errorf("round %d: the child says %q", round, line)
			}
			if after >= 3*round {
				cmd.Process.Kill()
				break
			}
		}
		cmd.Wait()
		db := mustOpenDir(t, dir)
		if err := db.Check(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		for _, id := range acked {
			if _, _, ok, err := db.LookupID(ctx, "shop", id); !ok || err != nil {
				t.Fatalf("round %d: event %s acknowledged before the kill is gone: %v", round, id, err)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, bboltstore.FileName+".compact")); !os.IsNotExist(err) {
			t.Fatalf("round %d: the compaction's copy is left after open: %v", round, err)
		}
		t.Logf("round %d: killed in or after compaction %d, %d events acknowledged, all there", round, compactions, len(acked))
		db.Close()
	}
}

// compactChild accepts events and compacts until it is killed, telling
// the parent each acknowledged id and each compaction begun.
func compactChild(t *testing.T, dir string) {
	orders := bboltstore.ShopifyOrders(t)
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	round, _ := strconv.Atoi(os.Getenv("HOOKBOX_COMPACT_ROUND"))
	var mu sync.Mutex
	say := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		os.Stdout.WriteString(s + "\n")
	}
	for w := range 4 {
		go func() {
			for i := 0; ; i++ {
				k := 10_000_000*(round+1) + 1_000_000*w + i
				at := t0.Add(time.Duration(k) * time.Second)
				e := shopifyEvent(orders, k, at)
				if _, err := db.Accept(context.Background(), e, at.Add(time.Hour), nil); err != nil {
					say("error " + err.Error())
					return
				}
				say("acked " + e.ID)
			}
		}()
	}
	for {
		say("compact")
		if _, err := db.Compact(context.Background()); err != nil {
			say("error " + err.Error())
		}
	}
}
