package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
	"hookbox/storage/postgres"
	"hookbox/storage/storetest"
)

// recorder keeps the queries a store sends, with their arguments.
type recorder struct {
	mu      sync.Mutex
	on      bool
	queries []pgx.TraceQueryStartData
}

func (r *recorder) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.queries = append(r.queries, data)
	}
	return ctx
}

func (r *recorder) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// The queries of a batch (the outbox's leases) are recorded too.
func (r *recorder) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (r *recorder) TraceBatchQuery(_ context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		r.queries = append(r.queries, pgx.TraceQueryStartData{SQL: data.SQL, Args: data.Args})
	}
}

func (r *recorder) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// Every query the status page, the API, the dispatcher and the sweep send
// reads hookbox's tables through an index, never by a sequential scan, on
// a database of 20,000 events: the test records the store's real queries
// and EXPLAINs each with its arguments. The plans are logged (go test -v
// -run TestSchema_IndexScans ./storage/postgres).
func TestSchema_IndexScans(t *testing.T) {
	rec := &recorder{}
	postgres.SetTestTracer(rec)
	db := MustOpen(t, postgres.Options{})
	postgres.SetTestTracer(nil)
	// 20,000 events of three sources, one delivery each: mostly
	// delivered, every 50th pending, every 100th dead; 1,000 debounce keys;
	// every second event merged into the next.
	for _, sql := range []string{
		`INSERT INTO hookbox_events (seq, source, id, topic, received_at, headers, body)
		 SELECT g, (ARRAY['shop','stripe','gh'])[g % 3 + 1], convert_to('evt_' || g, 'UTF8'), convert_to('orders/create', 'UTF8'),
		        $1::timestamptz + g * interval '1 second', '\x00', convert_to(repeat('x', 200), 'UTF8')
		 FROM generate_series(1, 20000) g`,
		`INSERT INTO hookbox_event_ids (source, id, received, expires, seq) SELECT source, id, received_at, received_at + interval '30 days', seq FROM hookbox_events`,
		`SELECT setval('hookbox_event_seq', 20000)`,
		`INSERT INTO hookbox_deliveries (event_seq, destination, state, due, run_at, created, updated)
		 SELECT g, 'pos', CASE WHEN g % 100 = 0 THEN 3 WHEN g % 50 = 0 THEN 1 ELSE 2 END, $1::timestamptz + g * interval '1 second',
		        CASE WHEN g % 100 <> 0 AND g % 50 = 0 THEN $1::timestamptz + g * interval '1 second' END, $1::timestamptz, $1::timestamptz
		 FROM generate_series(1, 20000) g`,
		`INSERT INTO hookbox_attempts (delivery_id, n, started, duration_ns, status, error, response) SELECT id, 1, $1::timestamptz, 1000, 200, '', '' FROM hookbox_deliveries`,
		`INSERT INTO hookbox_debounce (route, key, due, event_seq, dests, window_ns, window_times, free_at)
		 SELECT 'customers', convert_to('k' || g, 'UTF8'), CASE WHEN g % 10 = 0 THEN $1::timestamptz + g * interval '1 second' END,
		        CASE WHEN g % 10 = 0 THEN g END, '{pos}', 60000000000, ARRAY[$1::timestamptz], $1::timestamptz + interval '1 minute'
		 FROM generate_series(1, 1000) g`,
		`INSERT INTO hookbox_merged (fired_seq, merged_seq) SELECT g, g - 1 FROM generate_series(2, 20000, 2) g`,
		`INSERT INTO hookbox_poison (at, kind, key, reason, delivery, destination)
		 SELECT $1::timestamptz, 'event', g::text, 'corrupt headers record', g, 'pos' FROM generate_series(1, 200) g`,
		`UPDATE hookbox_events SET body = convert_to('{"name":"#1004"}', 'UTF8') WHERE seq = 1004`,
		`VACUUM ANALYZE`,
	} {
		args := []any{t0}
		if !strings.Contains(sql, "$1") {
			args = nil
		}
		if err := db.Exec(sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}

	ictx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := db.SearchIndexed(ictx); err != nil {
		t.Fatalf("the body search index: %v", err)
	}
	rec.mu.Lock()
	rec.on = true
	rec.mu.Unlock()
	// What the pages and the API read.
	for _, q := range []app.EventQuery{
		{Limit: 50}, {Limit: 50, Before: 15000}, {Limit: 50, Source: "stripe"}, {Limit: 50, Status: "dead"},
		{Limit: 50, Topic: "orders/*"}, {Limit: 50, ID: "evt_77"}, {Limit: 50, ID: "evt_77", Source: "stripe"},
		{Limit: 50, Until: t0.Add(5000 * time.Second)}, {Limit: 50, Since: t0.Add(19000 * time.Second)},
		{Limit: 50, Q: "#1004"}, {Limit: 50, Q: "#1004", Source: "shop"},
	} {
		if _, _, err := db.ListEvents(context.Background(), q); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := db.DeadLetters(context.Background(), 0, 50)
	must(err)
	_, err = db.Event(context.Background(), 777)
	must(err)
	_, _, err = db.ReplayCandidates(context.Background(), app.ReplayQuery{Q: "#1004"})
	must(err)
	_, err = db.EventDeliveries(context.Background(), 777)
	must(err)
	_, _, err = db.Delivery(context.Background(), 777)
	must(err)
	_, err = db.MergedInto(context.Background(), 778)
	must(err)
	_, err = db.Backlog(context.Background(), "pos", 10000)
	must(err)
	_, err = db.CountDead(context.Background())
	must(err)
	_, err = db.CountPending(context.Background())
	must(err)
	_, _, _, err = db.LookupID(context.Background(), "shop", "evt_3")
	must(err)
	_, _, err = db.Poisoned(context.Background(), 10)
	must(err)
	// What the dispatcher and the sweep run (EXPLAIN does not run them).
	_, _, err = db.DueDeliveries(context.Background(), "pos", t0.Add(time.Hour), 64, storetest.Never)
	must(err)
	_, err = db.WaitingDeliveries(context.Background(), "pos", t0.Add(time.Hour), 0, 64, storetest.Never)
	must(err)
	_, _, err = db.FirePending(context.Background(), t0.Add(time.Hour))
	must(err)
	_, err = db.ForgetExpiredIDs(context.Background(), t0, 500)
	must(err)
	_, err = db.DeleteEventsBefore(context.Background(), t0.Add(time.Hour), 500)
	must(err)
	_, err = db.PruneWindows(context.Background(), t0.Add(time.Hour), 500)
	must(err)
	rec.mu.Lock()
	rec.on = false
	queries := rec.queries
	rec.mu.Unlock()

	explained := 0
	for _, q := range queries {
		sql := strings.TrimSpace(q.SQL)
		head := strings.ToUpper(strings.Fields(sql)[0])
		if head != "SELECT" && head != "WITH" && head != "UPDATE" && head != "DELETE" {
			continue // BEGIN, SET LOCAL, COMMIT
		}
		plan := explain(t, db, sql, q.Args)
		explained++
		if strings.Contains(plan, "Seq Scan on hookbox_") {
			t.Errorf("a sequential scan:\n%s\n%s", sql, plan)
		} else {
			t.Logf("%s\n%s", oneLine(sql), plan)
		}
	}
	if explained < 25 {
		t.Fatalf("explained %d queries; the recorder missed some", explained)
	}
}

// explain returns the plan of sql with args.
func explain(t *testing.T, db *postgres.DB, sql string, args []any) string {
	t.Helper()
	var lines []string
	err := db.Query("EXPLAIN "+sql, args, func(line string) { lines = append(lines, line) })
	if err != nil {
		t.Fatalf("EXPLAIN %s: %v", sql, err)
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
