package postgres_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

var t0 = storetest.T0

// routed accepts n events, each with a delivery to pos, on db.
func routed(t *testing.T, db *postgres.DB, prefix string, n int) {
	t.Helper()
	storetest.InParallel(t, n, func(i int) error {
		e := storetest.NewEvent("shop", fmt.Sprint(prefix, i), t0)
		_, err := db.Accept(context.Background(), e, t0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")})
		return err
	})
}

func ids(work []app.Work) []uint64 {
	var out []uint64
	for _, w := range work {
		out = append(out, w.Delivery.ID)
	}
	return out
}

// Two nodes on one database never get the same delivery while its lease
// lasts; a node that leased and never recorded hands its deliveries on
// when the lease ends, and its late record still counts.
func TestLease_TwoNodes(t *testing.T) {
	url := pgtest.URL(t)
	a := mustOpenURL(t, url, postgres.Options{Lease: time.Minute})
	b := mustOpenURL(t, url, postgres.Options{Lease: time.Minute})
	routed(t, a, "e", 10)

	wa, next, err := a.DueDeliveries(context.Background(), "pos", t0, 4, storetest.Never)
	if err != nil || len(wa) != 4 || !next.Equal(t0) {
		t.Fatalf("node A: %d deliveries, next %v, %v; want 4, next %v", len(wa), next, err, t0)
	}
	wb, next, err := b.DueDeliveries(context.Background(), "pos", t0, 100, storetest.Never)
	if err != nil || len(wb) != 6 || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("node B: %d deliveries, next %v, %v; want 6, next the end of A's lease", len(wb), next, err)
	}
	if both := slices.DeleteFunc(ids(wa), func(id uint64) bool { return !slices.Contains(ids(wb), id) }); len(both) > 0 {
		t.Fatalf("deliveries %v went to both nodes", both)
	}
	// B records its six; A dies (records nothing).
	for _, w := range wb {
		if err := b.RecordAttempts(context.Background(), []app.AttemptRecord{{ID: w.Delivery.ID, Attempt: &app.Attempt{Start: t0, Status: 200}, State: app.Delivered}})[0]; err != nil {
			t.Fatal(err)
		}
	}
	if w, next, _ := b.DueDeliveries(context.Background(), "pos", t0.Add(59*time.Second), 100, storetest.Never); len(w) != 0 || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("during A's lease B got %d, next %v; want none until %v", len(w), next, t0.Add(time.Minute))
	}
	wb, _, err = b.DueDeliveries(context.Background(), "pos", t0.Add(time.Minute), 100, storetest.Never)
	if err != nil || !slices.Equal(ids(wb), ids(wa)) {
		t.Fatalf("after A's lease B got %v, %v; want A's %v", ids(wb), err, ids(wa))
	}
	if wb[0].Delivery.Attempts != 0 || string(wb[0].Event.Body) != string(storetest.NewEvent("", "", t0).Body) {
		t.Fatalf("handed-on delivery %+v", wb[0].Delivery)
	}
	// A comes back and records late: the attempt is kept.
	if err := a.RecordAttempts(context.Background(), []app.AttemptRecord{{ID: wa[0].Delivery.ID, Attempt: &app.Attempt{Start: t0, Status: 500}, State: app.Pending, Due: t0.Add(time.Hour)}})[0]; err != nil {
		t.Fatal(err)
	}
	if d, attempts, _ := a.Delivery(context.Background(), wa[0].Delivery.ID); d.Attempts != 1 || len(attempts) != 1 {
		t.Fatalf("late record: %+v, %d attempts", d, len(attempts))
	}
}

// Many claimers on two nodes at once: every delivery goes out once.
func TestLease_ConcurrentClaims(t *testing.T) {
	url := pgtest.URL(t)
	nodes := []*postgres.DB{mustOpenURL(t, url, postgres.Options{}), mustOpenURL(t, url, postgres.Options{})}
	const n = 600
	routed(t, nodes[0], "c", n)
	var mu sync.Mutex
	got := map[uint64]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			db := nodes[i%2]
			for {
				work, _, err := db.DueDeliveries(context.Background(), "pos", t0, 7, storetest.Never)
				if err != nil {
					t.Error(err)
					return
				}
				if len(work) == 0 {
					return
				}
				mu.Lock()
				for _, w := range work {
					got[w.Delivery.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	twice := 0
	for _, c := range got {
		if c > 1 {
			twice++
		}
	}
	if len(got) != n || twice > 0 {
		t.Fatalf("%d of %d deliveries claimed, %d more than once", len(got), n, twice)
	}
}

// A node that stops gives back what it leased but did not record, so the
// others send it at once rather than after the lease.
func TestClose_GivesBackLeases(t *testing.T) {
	url := pgtest.URL(t)
	a := mustOpenURL(t, url, postgres.Options{Lease: time.Hour})
	b := mustOpenURL(t, url, postgres.Options{Lease: time.Hour})
	routed(t, a, "g", 3)
	if w, _, _ := a.DueDeliveries(context.Background(), "pos", t0, 10, storetest.Never); len(w) != 3 {
		t.Fatalf("A leased %d, want 3", len(w))
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if w, _, err := b.DueDeliveries(context.Background(), "pos", t0, 10, storetest.Never); len(w) != 3 || err != nil {
		t.Fatalf("after A stopped, B got %d, %v; want 3 at once", len(w), err)
	}
}

// A commit on one node wakes the others through NOTIFY, and a node hears
// nothing of its own commits twice. It logs the latency from the call to
// Accept on one node to the wake-up of another, with NOTIFY and with a
// short poll alone (the alternative the design weighed).
func TestNotify_WakesOtherNodes(t *testing.T) {
	url := pgtest.URL(t)
	a := mustOpenURL(t, url, postgres.Options{Poll: time.Hour})
	var aWoken atomic.Int64
	a.OnOpened(func() { aWoken.Add(1) })
	warm := 0 // commits made to warm up
	measure := func(b *postgres.DB, n int) (lat, commit []time.Duration) {
		woke := make(chan time.Time, 1000)
		b.OnOpened(func() { woke <- time.Now() })
		// Until B's listener is up (it LISTENs right after Open), a
		// commit may go unheard: warm up until one is heard.
		for try := 0; ; try++ {
			e := storetest.NewEvent("shop", fmt.Sprint(b.Node(), "-warm-", try), t0)
			if _, err := a.Accept(context.Background(), e, t0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")}); err != nil {
				t.Fatal(err)
			}
			warm++
			select {
			case <-woke:
			case <-time.After(500 * time.Millisecond):
				if try < 20 {
					continue
				}
				t.Fatal("node B never heard node A")
			}
			break
		}
		for len(woke) > 0 {
			<-woke
		}
		for i := range n {
			e := storetest.NewEvent("shop", fmt.Sprint(b.Node(), i), t0)
			start := time.Now()
			if _, err := a.Accept(context.Background(), e, t0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")}); err != nil {
				t.Fatal(err)
			}
			commit = append(commit, time.Since(start))
			select {
			case at := <-woke:
				lat = append(lat, at.Sub(start))
			case <-time.After(10 * time.Second):
				t.Fatalf("node B was not woken by node A's commit %d", i)
			}
		}
		slices.Sort(lat)
		slices.Sort(commit)
		return lat, commit
	}
	lat, commit := measure(mustOpenURL(t, url, postgres.Options{Poll: time.Hour}), 50)
	if n, want := aWoken.Load(), int64(50+warm); n != want {
		t.Fatalf("node A was woken %d times by its own %d commits: want once each, not again by its own NOTIFY", n, want)
	}
	t.Logf("NOTIFY: Accept called on node A → node B woken: p50 %v, p99 %v, max %v (the accept's commit alone: p50 %v); 50 commits",
		lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1], commit[len(commit)/2])
	deaf := mustOpenURL(t, url, postgres.Options{Poll: 250 * time.Millisecond})
	deaf.Deafen()
	lat, _ = measure(deaf, 10)
	t.Logf("poll every 250ms alone: Accept called on node A → node B woken: p50 %v, max %v (10 commits)", lat[len(lat)/2], lat[len(lat)-1])
}

// One node at a time runs the cluster's jobs; when it stops, another
// takes over within the poll interval.
func TestLeader_OneAtATime(t *testing.T) {
	url := pgtest.URL(t)
	opt := postgres.Options{Poll: 100 * time.Millisecond}
	nodes := []*postgres.DB{mustOpenURL(t, url, opt), mustOpenURL(t, url, opt), mustOpenURL(t, url, opt)}
	leaders := func() []int {
		var out []int
		for i, n := range nodes {
			if n.Leader() {
				out = append(out, i)
			}
		}
		return out
	}
	waitOne := func() int {
		t.Helper()
		one := -1
		apptest.Eventually(t, 10*time.Second, "a node taking the cluster's jobs", func() bool {
			l := leaders()
			if len(l) > 1 {
				t.Fatalf("nodes %v all run the cluster's jobs", l)
			}
			if len(l) == 1 {
				one = l[0]
			}
			return one >= 0
		})
		return one
	}
	first := waitOne()
	for range 5 { // it stays one
		time.Sleep(opt.Poll / 2) // the time is what is checked: still one leader over two and a half polls
		if l := leaders(); !slices.Equal(l, []int{first}) {
			t.Fatalf("leaders %v, want only %d", l, first)
		}
	}
	nodes[first].Close()
	nodes = slices.Delete(nodes, first, first+1)
	waitOne()
}

// Nodes that start together on an empty database create the schema once.
func TestMigrate_NodesStartTogether(t *testing.T) {
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	dbs := make([]*postgres.DB, 4)
	for i := range dbs {
		wg.Go(func() {
			dbs[i], errs[i] = postgres.Open(context.Background(), url, postgres.Options{Logger: quietLogger})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	if err := dbs[0].Exec(fmt.Sprintf("DO $$ BEGIN IF (SELECT count(*) FROM hookbox_schema_version) <> %d THEN RAISE 'versions applied more than once'; END IF; END $$", postgres.SchemaVersion)); err != nil {
		t.Fatal(err)
	}
}

// A database migrated by a newer hookbox is refused, not used.
func TestMigrate_NewerSchemaRefused(t *testing.T) {
	url := pgtest.URL(t)
	db := mustOpenURL(t, url, postgres.Options{})
	if err := db.Exec("INSERT INTO hookbox_schema_version (version) VALUES ($1)", postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(context.Background(), url, postgres.Options{Logger: quietLogger})
	if err == nil || !strings.Contains(err.Error(), "newer than this hookbox knows") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

// A session that would commit without waiting for the flush
// (synchronous_commit off, here from the URL) is turned on; a stronger
// or other durable setting is kept.
func TestSynchronousCommit(t *testing.T) {
	url := pgtest.URL(t)
	for _, tc := range []struct{ set, want string }{{"off", "on"}, {"local", "local"}, {"remote_apply", "remote_apply"}} {
		db := mustOpenURL(t, url+"&synchronous_commit="+tc.set, postgres.Options{})
		for range 3 { // every connection of the pool
			if got, err := db.Setting("synchronous_commit"); got != tc.want || err != nil {
				t.Fatalf("synchronous_commit=%s in the URL: sessions have %q, %v; want %q", tc.set, got, err, tc.want)
			}
		}
	}
}

// The URL's password never shows in what Open's errors or MaskURL print.
func TestMaskURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://hookbox:s3cret@db:5432/hookbox?sslmode=require", "postgres://hookbox:xxxxx@db:5432/hookbox?sslmode=require"},
		{"postgres://db/hookbox?password=s3cret&sslmode=disable", "postgres://db/hookbox?password=xxxxx&sslmode=disable"},
		{"postgresql://hookbox@db/hookbox", "postgresql://hookbox@db/hookbox"},
		{"host=db password=s3cret", "(database URL)"},
		{"postgres://db/hookbox?sslkey=%2Fk&sslpassword=s3cret", "postgres://db/hookbox?sslkey=%2Fk&sslpassword=xxxxx"},
	} {
		if got := postgres.MaskURL(tc.in); got != tc.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	_, err := postgres.Open(context.Background(), "postgres://hookbox:s3cret@127.0.0.1:1/x?connect_timeout=1&sslmode=bogus", postgres.Options{Logger: quietLogger})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("Open with a bad URL: %v", err)
	}
	for _, u := range []string{"postgres://hookbox:s3cret@127.0.0.1:1/x?connect_timeout=1", "postgres://127.0.0.1:1/x?connect_timeout=1&sslmode=bogus&sslpassword=s3cret"} {
		_, err = postgres.Open(context.Background(), u, postgres.Options{Logger: quietLogger})
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Fatalf("Open of %s: %v", postgres.MaskURL(u), err)
		}
	}
}

// A schema whose name is as long as PostgreSQL allows works: the NOTIFY
// channel's name stays within its 63 bytes.
func TestLongSchemaName(t *testing.T) {
	base := pgtest.BaseURL(t)
	schema := "s" + strings.Repeat("x", 50) + fmt.Sprint(time.Now().UnixNano()%1e10)
	admin := mustOpenURL(t, pgtest.URL(t), postgres.Options{})
	if err := admin.Exec(`CREATE SCHEMA "` + schema + `"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP SCHEMA "` + schema + `" CASCADE`) })
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db := mustOpenURL(t, u.String(), postgres.Options{})
	e := storetest.NewEvent("shop", "long", t0)
	if _, err := db.Accept(context.Background(), e, t0.Add(time.Hour), &app.Plan{Direct: app.DirectTo("pos")}); err != nil {
		t.Fatalf("accept in schema %s: %v", schema, err)
	}
}
