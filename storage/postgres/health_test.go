package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// outcomes records what OnCommit tells.
type outcomes struct {
	mu   sync.Mutex
	errs []error
}

func (o *outcomes) add(err error) { o.mu.Lock(); o.errs = append(o.errs, err); o.mu.Unlock() }

// since returns the outcomes told from the n-th on.
func (o *outcomes) since(n int) []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]error(nil), o.errs[min(n, len(o.errs)):]...)
}

func (o *outcomes) count() int { o.mu.Lock(); defer o.mu.Unlock(); return len(o.errs) }

// OnCommit tells hookbox's StorageHealth of every commit, as on bbolt: a
// database that goes out of reach, or turns read-only (a fail-over to a
// replica), fails the writes and is told; once it takes writes again, the
// next commit (the probe StorageHealth makes each second) says so. A
// write that fails for its own data is not told: the database is fine.
func TestOnCommit_DatabaseFails(t *testing.T) {
	dbURL := pgtest.Database(t)
	db := mustOpenURL(t, dbURL, postgres.Options{})
	var o outcomes
	db.OnCommit(o.add)
	accept := func(id string) error {
		_, err := db.Accept(context.Background(), storetest.NewEvent("shop", id, t0), t0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")})
		return err
	}
	if err := accept("ok-1"); err != nil {
		t.Fatal(err)
	}
	if got := o.since(0); len(got) != 1 || got[0] != nil {
		t.Fatalf("after an accept, OnCommit heard %v; want one success", got)
	}

	for _, tc := range []struct {
		name        string
		fail, again func()
		want        string
	}{
		{"Unreachable", func() { pgtest.SetReachable(t, dbURL, false) }, func() { pgtest.SetReachable(t, dbURL, true) }, "not currently accepting connections"},
		{"ReadOnly", func() { pgtest.SetReadOnly(t, dbURL, true) }, func() { pgtest.SetReadOnly(t, dbURL, false) }, "read-only transaction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fail()
			restored := false
			defer func() {
				if !restored {
					tc.again()
				}
			}()
			from := o.count()
			if err := accept("down-" + tc.name); err == nil {
				t.Fatal("an accept succeeded on a database that takes no writes")
			}
			if err := db.SetMeta(context.Background(), "health_probe", []byte("x")); err == nil {
				t.Fatal("the probe's write succeeded")
			}
			if _, _, err := db.DueDeliveries(context.Background(), "pos", t0, 10, storetest.Never); err == nil {
				t.Fatal("a lease succeeded")
			}
			got := o.since(from)
			if len(got) < 3 {
				t.Fatalf("OnCommit heard %v; want the three failures", got)
			}
			// (The first may be the end of the session the pool had.)
			for _, err := range got {
				if err == nil {
					t.Fatalf("OnCommit heard %v; want failures only", got)
				}
			}
			if last := got[len(got)-1]; !strings.Contains(last.Error(), tc.want) {
				t.Fatalf("OnCommit heard %v last; want a failure saying %q", last, tc.want)
			}
			tc.again()
			restored = true
			from = o.count()
			// The pool connects again at the next write.
			apptest.Until(t, 10*time.Second, func() error {
				return db.SetMeta(context.Background(), "health_probe", []byte("y"))
			})
			if got := o.since(from); len(got) == 0 || got[len(got)-1] != nil {
				t.Fatalf("after the database took writes again, OnCommit heard %v; want a success last", got)
			}
			if err := accept("again-" + tc.name); err != nil {
				t.Fatal(err)
			}
		})
	}

	t.Run("OwnDataNotTold", func(t *testing.T) {
		from := o.count()
		// A debounce key too large for the index fails that accept alone.
		// (random bytes do not compress below the index's limit)
		var b [20 << 10]byte
		rand.Read(b[:])
		huge := &app.DebounceOp{Route: "r", Key: hex.EncodeToString(b[:]), Delay: time.Second, To: []string{"pos"}}
		e := storetest.NewEvent("shop", "huge-key", t0)
		_, err := db.Accept(context.Background(), e, t0.Add(time.Hour), &app.Plan{Debounce: []*app.DebounceOp{huge}})
		if err == nil {
			t.Fatal("an accept with a key too large to index succeeded")
		}
		if got := o.since(from); len(got) != 0 {
			t.Fatalf("OnCommit heard %v for a write's own bad data; want nothing", got)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if err := accept("closed"); !errors.Is(err, postgres.ErrClosed) {
			t.Fatalf("accept after Close: %v", err)
		}
		if got := o.since(from); len(got) != 0 {
			t.Fatalf("OnCommit heard %v for a write after Close; want nothing", got)
		}
	})
}
