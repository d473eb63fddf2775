package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
	"hookbox/storage/storetest"
)

// searchIndexed waits for db's search index and fails t without it (a
// build on a million 2 KiB bodies takes minutes).
func searchIndexed(t *testing.T, db *postgres.DB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if err := db.SearchIndexed(ctx); err != nil {
		t.Fatalf("the body search index: %v", err)
	}
}

// The body search index: built at start; without it (dropped, or never
// made because pg_trgm is refused) a search finds the same events; one
// left invalid (a build cut short) is built again by the next start.
func TestSearch_Index(t *testing.T) {
	url := pgtest.URL(t)
	db := mustOpenURL(t, url, postgres.Options{})
	searchIndexed(t, db)
	for i := range 3 {
		e := storetest.NewEvent("shop", fmt.Sprint("wh-", i), t0.Add(time.Duration(i)*time.Second))
		e.Body = storetest.ShopifyOrder(i)
		if _, err := db.Accept(context.Background(), e, e.ReceivedAt.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	find := func() string {
		t.Helper()
		res, err := db.SearchEvents(context.Background(), app.EventQuery{Q: storetest.OrderName(1)})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range res.Rows {
			ids = append(ids, r.ID)
		}
		return strings.Join(ids, " ")
	}
	if got := find(); got != "wh-1" {
		t.Fatalf("with the index: %q, want wh-1", got)
	}
	mustExec(t, db, "DROP INDEX hookbox_events_body_trgm")
	if got := find(); got != "wh-1" {
		t.Fatalf("without the index: %q, want wh-1", got)
	}
	// A build cut short leaves the index invalid: the next start drops
	// and builds it again.
	db2 := mustOpenURL(t, url, postgres.Options{})
	searchIndexed(t, db2)
	mustExec(t, db, "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'hookbox_events_body_trgm'::regclass")
	db3 := mustOpenURL(t, url, postgres.Options{})
	searchIndexed(t, db3)
	var valid []string
	if err := db.Query("SELECT indisvalid::text FROM pg_index WHERE indexrelid = 'hookbox_events_body_trgm'::regclass", nil,
		func(v string) { valid = append(valid, v) }); err != nil || strings.Join(valid, "") != "true" {
		t.Fatalf("index after the restart: valid %v, %v", valid, err)
	}
	// storage.search_index = false: the next start drops it, and a search
	// still finds the same events.
	db4 := mustOpenURL(t, url, postgres.Options{NoSearchIndex: true})
	searchIndexed(t, db4)
	var left []string
	if err := db.Query("SELECT coalesce(to_regclass('hookbox_events_body_trgm')::text, 'none')", nil,
		func(v string) { left = append(left, v) }); err != nil || strings.Join(left, "") != "none" {
		t.Fatalf("index after a start with NoSearchIndex: %v, %v; want none", left, err)
	}
	if got := find(); got != "wh-1" {
		t.Fatalf("after the index was dropped: %q, want wh-1", got)
	}
}

// A database user that may not create pg_trgm (no CREATE on the
// database) gets a warning in the log that names the extension, and its
// searches find what they would with the index.
func TestSearch_WithoutTrigram(t *testing.T) {
	var b [4]byte
	rand.Read(b[:])
	role := "hookbox_notrgm_" + hex.EncodeToString(b[:])
	base := pgtest.BaseURL(t)
	run := func(u, sql string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	run(base, "CREATE ROLE "+role+" LOGIN PASSWORD 'pw-notrgm'")
	t.Cleanup(func() { run(base, "DROP ROLE IF EXISTS "+role) }) // after the database is dropped (cleanups run last first)
	dbURL := pgtest.Database(t)
	run(dbURL, "CREATE SCHEMA hb AUTHORIZATION "+role)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(role, "pw-notrgm")
	q := u.Query()
	q.Set("search_path", "hb")
	u.RawQuery = q.Encode()

	var logs syncBuffer
	db := mustOpenURL(t, u.String(), postgres.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.SearchIndexed(ctx); err == nil || !strings.Contains(err.Error(), "the pg_trgm extension cannot be created") {
		t.Fatalf("SearchIndexed = %v; want the extension refused", err)
	}
	if l := logs.String(); !strings.Contains(l, "level=WARN") || !strings.Contains(l, "body search runs without an index") ||
		!strings.Contains(l, "CREATE EXTENSION pg_trgm") {
		t.Fatalf("log:\n%s", l)
	}
	e := storetest.NewEvent("shop", "wh-7", t0)
	e.Body = storetest.ShopifyOrder(7)
	if _, err := db.Accept(context.Background(), e, t0.Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	res, err := db.SearchEvents(context.Background(), app.EventQuery{Q: storetest.OrderName(7)})
	if err != nil || len(res.Rows) != 1 || res.Rows[0].ID != "wh-7" {
		t.Fatalf("search without the index = %+v, %v", res, err)
	}
}

// syncBuffer is a log's buffer that the store's goroutines write while
// the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestScale_Search measures the body search of issue 29 on N stored 2 KiB
// Shopify orders (HOOKBOX_SEARCH_SCALE=N; 1000000 for the acceptance
// figures): the orders are accepted through the store without the index,
// the next start builds it (CREATE INDEX CONCURRENTLY, timed), and the
// first page of a search for an order name present once (newest, middle,
// oldest) or nowhere is timed, three times each, then without the index.
// HOOKBOX_SEARCH_FILL_INDEXED=1 fills with the index in place instead,
// to see what it costs the accepts. HOOKBOX_SEARCH_EXPLAIN=1 logs the
// plans. Skipped unless HOOKBOX_SEARCH_SCALE is set; never part of CI's
// default run.
func TestScale_Search(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("HOOKBOX_SEARCH_SCALE"))
	if n <= 0 {
		t.Skip("set HOOKBOX_SEARCH_SCALE=1000000 to run")
	}
	url := pgtest.URL(t)
	db := mustOpenURL(t, url, postgres.Options{})
	searchIndexed(t, db)
	if os.Getenv("HOOKBOX_SEARCH_FILL_INDEXED") != "" {
		// What the index costs the accepts: fill with it in place.
		storetest.FillOrders(t, db, n, 250*time.Millisecond)
		mustExec(t, db, "DROP INDEX hookbox_events_body_trgm")
	} else {
		mustExec(t, db, "DROP INDEX hookbox_events_body_trgm")
		storetest.FillOrders(t, db, n, 250*time.Millisecond)
	}
	db.Close()

	rec := &recorder{}
	postgres.SetTestTracer(rec)
	defer postgres.SetTestTracer(nil)
	start := time.Now()
	db = mustOpenURL(t, url, postgres.Options{})
	searchIndexed(t, db)
	t.Logf("index built at start in %v (CREATE INDEX CONCURRENTLY)", time.Since(start).Round(time.Second))
	start = time.Now()
	mustExec(t, db, "ANALYZE hookbox_events")
	t.Logf("ANALYZE in %v", time.Since(start).Round(time.Millisecond))
	var sizes []string
	db.Query(`SELECT pg_size_pretty(pg_total_relation_size('hookbox_events')) || ' table, ' ||
		pg_size_pretty(pg_relation_size('hookbox_events_body_trgm')) || ' index'`, nil, func(s string) { sizes = append(sizes, s) })
	t.Logf("sizes: %v", sizes)
	measure := func(label string) {
		for _, tc := range []struct{ name, q string }{
			{"newest", storetest.OrderName(n)},
			{"middle", storetest.OrderName(n / 2)},
			{"oldest", storetest.OrderName(1)},
			{"absent", "#9999999"},
		} {
			var times []string
			var found int
			for k := range 3 {
				rec.mu.Lock()
				rec.on, rec.queries = k == 0, nil
				rec.mu.Unlock()
				start := time.Now()
				res, err := db.SearchEvents(context.Background(), app.EventQuery{Q: tc.q, Limit: 50})
				times = append(times, time.Since(start).Round(time.Millisecond).String())
				rec.mu.Lock()
				rec.on = false
				queries := rec.queries
				rec.mu.Unlock()
				if os.Getenv("HOOKBOX_SEARCH_EXPLAIN") != "" && k == 0 {
					for _, q := range queries {
						t.Logf("%s:\n%s", tc.name, explain(t, db, "(ANALYZE, BUFFERS) "+q.SQL, q.Args))
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				found = len(res.Rows)
			}
			t.Logf("%s, %s (q=%s): first page in %s; %d found", label, tc.name, tc.q, strings.Join(times, ", "), found)
			if want := map[bool]int{true: 0, false: 1}[tc.name == "absent"]; found != want {
				t.Errorf("%s: %d found, want %d", tc.name, found, want)
			}
		}
	}
	measure("with the index")
	mustExec(t, db, "DROP INDEX hookbox_events_body_trgm")
	measure("without the index")
}

// TestSearch_StatementTimeout (issue 42): a search whose statements would
// run for seconds (the red team's 'a'×1,023+'b' over bodies that hold its
// every trigram, where LIKE compares ~1,000 bytes at each place) is
// cancelled by its statement_timeout and answers "stopped", no rows.
func TestSearch_StatementTimeout(t *testing.T) {
	db := MustOpen(t, postgres.Options{})
	searchIndexed(t, db)
	body := []byte(strings.Repeat(strings.Repeat("a", 1000)+"b ", (1<<20)/1002))
	for i := range 4 {
		e := storetest.NewEvent("shop", fmt.Sprint("big-", i), t0.Add(time.Duration(i)*time.Second))
		e.Body = body
		if _, err := db.Accept(context.Background(), e, e.ReceivedAt.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	db.SetSearchTime(100 * time.Millisecond)
	start := time.Now()
	res, err := db.SearchEvents(context.Background(), app.EventQuery{Q: strings.Repeat("a", app.MaxSearch-1) + "b"})
	t.Logf("stopped after %v", time.Since(start))
	if err != nil || !res.Stopped || len(res.Rows) != 0 || !res.SearchedUntil.IsZero() {
		t.Fatalf("SearchEvents past its statement_timeout = %+v, %v; want stopped, no rows", res, err)
	}
	// A search with time enough is not cut: the budget, not an error,
	// stopped the first. (PostgreSQL looks at the cancel between rows: one
	// 1 MiB body's LIKE against the text above takes ~1 s, so the first
	// answer comes after about one such row, not after 100 ms.)
	db.SetSearchTime(time.Minute)
	start = time.Now()
	res, err = db.SearchEvents(context.Background(), app.EventQuery{Q: "ab " + strings.Repeat("a", 20)})
	t.Logf("a search with time enough took %v", time.Since(start))
	if err != nil || res.Stopped || len(res.Rows) != 4 {
		t.Fatalf("SearchEvents with time enough = %d rows, stopped %v, %v; want 4 rows", len(res.Rows), res.Stopped, err)
	}
}
