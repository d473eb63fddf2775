package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/provider"
	"hookbox/app/receive"
	"hookbox/app/stream"
	"hookbox/app/web"
	"hookbox/storage"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

// streamNode is a hookbox server on 127.0.0.1 with its stream hub.
type streamNode struct {
	t    *testing.T
	base string
	srv  *web.Server
	hub  *stream.Hub
	db   storage.Store
	acc  *access.Service
}

func openBolt(t *testing.T) storage.Store {
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func openPostgres(t *testing.T, url string) storage.Store {
	db, err := postgres.Open(context.Background(), url, postgres.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// onBothStores runs f on a bbolt store and on a PostgreSQL one.
func onBothStores(t *testing.T, f func(t *testing.T, db storage.Store)) {
	t.Run("Bbolt", func(t *testing.T) { f(t, openBolt(t)) })
	t.Run("Postgres", func(t *testing.T) { f(t, openPostgres(t, pgtest.URL(t))) })
}

func startStreamNode(t *testing.T, db storage.Store, opts ...func(*web.Deps)) *streamNode {
	t.Helper()
	cfg := mustConfig(t, apiConfig)
	hub := stream.NewHub(db)
	acc := testAccess(t, cfg, db)
	deps := web.Deps{Receiver: receive.New(cfg, db), Store: db, Health: db.Ping, Access: acc, Stream: hub}
	for _, o := range opts {
		o(&deps)
	}
	srv := web.New(cfg, deps)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	ctx, stop := context.WithCancel(context.Background())
	go acc.Watch(ctx) // as serve does: changes made on another node
	t.Cleanup(func() { stop(); srv.Shutdown(context.Background()) })
	return &streamNode{t: t, base: "http://" + ln.Addr().String(), srv: srv, hub: hub, db: db, acc: acc}
}

// sendTo posts a Shopify webhook to base and fails unless it is accepted.
func sendTo(t *testing.T, base, id, topic string, body []byte) {
	t.Helper()
	if err := postWebhook(base, id, topic, body); err != nil {
		t.Fatal(err)
	}
}

func postWebhook(base, id, topic string, body []byte) error {
	h, err := provider.Sign("shopify", provider.Settings{Secrets: [][]byte{[]byte("s3cret-shop")}}, body, "", id, topic, time.Now())
	if err != nil {
		return err
	}
	req, _ := http.NewRequest("POST", base+"/in/shop", strings.NewReader(string(body)))
	req.Header = h
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	answer, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(answer), "accepted") {
		return fmt.Errorf("send %s: %d %s", id, res.StatusCode, answer)
	}
	return nil
}

// heapInUse returns the heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// sseMsg is one server-sent message; a comment has event ":".
type sseMsg struct{ id, event, data string }

// sseStream is an open stream being read.
type sseStream struct {
	res  *http.Response
	msgs chan sseMsg
	read *int64 // bytes read, once msgs is closed
}

// openStream opens GET /api/v1/stream at base with query and lastID
// ("": none), failing t unless it answers 200.
func openStream(t *testing.T, base, query, lastID string) *sseStream {
	t.Helper()
	res, err := requestStream(base, query, lastID)
	return readStream(t, res, err)
}

// readStream reads the answer of a stream's request, failing t unless it
// is 200.
func readStream(t *testing.T, res *http.Response, err error) *sseStream {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("stream: %d %s", res.StatusCode, b)
	}
	t.Cleanup(func() { res.Body.Close() })
	s := &sseStream{res: res, msgs: make(chan sseMsg, 16384), read: new(int64)}
	go func() {
		defer close(s.msgs)
		r := bufio.NewReaderSize(res.Body, 64<<10)
		var m sseMsg
		for {
			line, err := r.ReadString('\n')
			*s.read += int64(len(line))
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if m.event != "" || m.data != "" {
					s.msgs <- m
				}
				m = sseMsg{}
			case strings.HasPrefix(line, ":"):
				m = sseMsg{event: ":", data: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "id: "):
				m.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				m.event = line[7:]
			case strings.HasPrefix(line, "data: "):
				m.data = line[6:]
			}
		}
	}()
	return s
}

func requestStream(base, query, lastID string) (*http.Response, error) {
	req, _ := http.NewRequest("GET", base+"/api/v1/stream"+query, nil)
	req.SetBasicAuth("ops", "pw-1234")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	return http.DefaultClient.Do(req)
}

// next returns the next message that is not a comment, failing t after a
// minute or at the stream's end.
func (s *sseStream) next(t *testing.T) sseMsg {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case m, ok := <-s.msgs:
			if !ok {
				t.Fatal("the stream ended")
			}
			if m.event == ":" {
				continue
			}
			return m
		case <-timeout:
			t.Fatal("no message for a minute")
		}
	}
}

// event returns the next message, failing t unless it is an event.
func (s *sseStream) event(t *testing.T) app.StreamEvent {
	t.Helper()
	m := s.next(t)
	var e app.StreamEvent
	if m.event != "event" {
		t.Fatalf("got %+v; want an event", m)
	}
	if err := json.Unmarshal([]byte(m.data), &e); err != nil {
		t.Fatalf("event data %q: %v", m.data, err)
	}
	if m.id != fmt.Sprint(e.Seq) {
		t.Fatalf("id: %s for the event of seq %d", m.id, e.Seq)
	}
	var v any
	json.Unmarshal([]byte(m.data), &v)
	var problems []string
	checkJSON("/api/v1/stream", v, &problems)
	for _, p := range problems {
		t.Error(p)
	}
	return e
}

// notice returns the next message, failing t unless it is a notice of kind.
func (s *sseStream) notice(t *testing.T, kind string) app.StreamNotice {
	t.Helper()
	m := s.next(t)
	var n app.StreamNotice
	if m.event != "notice" || json.Unmarshal([]byte(m.data), &n) != nil || n.Kind != kind || n.Message == "" {
		t.Fatalf("got %+v; want a %s notice with a message", m, kind)
	}
	return n
}

// The endpoint, on both stores: its head, filters, events byte-exact with
// their headers, resume, and the per-user limit.
func TestStream_Endpoint(t *testing.T) {
	onBothStores(t, func(t *testing.T, db storage.Store) {
		n := startStreamNode(t, db)
		sendTo(t, n.base, "before", "orders/create", []byte(`{"before":true}`)) // before anyone listens
		s := openStream(t, n.base, "?source=shop&topic=orders/*", "")
		for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
			if got := s.res.Header.Get(k); got != want {
				t.Errorf("%s: %q; want %q", k, got, want)
			}
		}
		s.notice(t, app.StreamNoticeReady)
		body := []byte("{\"id\": 1, \"note\": \"a/b & <c>\"}\n")
		sendTo(t, n.base, "o1", "orders/create", body)
		sendTo(t, n.base, "p1", "products/update", []byte(`{"p":1}`)) // filtered out
		sendTo(t, n.base, "o2", "orders/paid", []byte(`{"id":2}`))
		e1, e2 := s.event(t), s.event(t)
		if e1.ID != "o1" || string(e1.Body) != string(body) || e1.Topic != "orders/create" || e1.Source != "shop" || e2.ID != "o2" {
			t.Fatalf("events %+v, %+v", e1, e2)
		}
		// No signature (a viewer could post it back to /in/shop), but the
		// provider to re-sign in and the sender's other headers.
		hmac, topic := false, false
		for _, h := range e1.Header {
			hmac = hmac || strings.Contains(strings.ToLower(h[0]), "hmac")
			topic = topic || strings.EqualFold(h[0], "X-Shopify-Topic") && h[1] == "orders/create"
		}
		if hmac || !topic || e1.Provider != "shopify" || e1.Signature != nil {
			t.Errorf("the event's headers %v (provider %q, signature %v): want the topic, no HMAC, provider shopify", e1.Header, e1.Provider, e1.Signature)
		}

		// Resume after o1: o2, then ready; p1 stays filtered out.
		r := openStream(t, n.base, "?topic=orders/*", fmt.Sprint(e1.Seq))
		if e := r.event(t); e.ID != "o2" {
			t.Fatalf("resumed with %+v; want o2", e)
		}
		r.notice(t, app.StreamNoticeReady)

		// Two streams are open for ops; two more fit, the fifth is refused.
		openStream(t, n.base, "", "")
		openStream(t, n.base, "", "")
		res, err := requestStream(n.base, "", "")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(b), "most per user") {
			t.Fatalf("a fifth stream: %d %s; want 429 with a sentence", res.StatusCode, b)
		}
		res, err = requestStream(n.base, "", "x")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Fatalf("Last-Event-ID x: %d; want 400", res.StatusCode)
		}
	})
}

// An idle stream gets a ping comment; a graceful stop ends the streams at
// once, not at their next ping.
func TestStream_PingAndShutdown(t *testing.T) {
	n := startStreamNode(t, openBolt(t))
	defer web.SetStreamTimes(50*time.Millisecond, web.StreamWriteTimeout)()
	s := openStream(t, n.base, "", "")
	s.notice(t, app.StreamNoticeReady)
	if m := <-s.msgs; m.event != ":" || m.data != "ping" {
		t.Fatalf("got %+v; want a ping", m)
	}
	web.SetStreamTimes(app.StreamPing, web.StreamWriteTimeout)()
	long := openStream(t, n.base, "", "")
	long.notice(t, app.StreamNoticeReady)
	start := time.Now()
	if err := n.srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	for range long.msgs { // the stream ends
	}
	if took >= app.StreamPing {
		t.Fatalf("Shutdown took %s with a stream open; want it well under StreamPing (%s)", took, app.StreamPing)
	}
	t.Logf("graceful stop with a stream open: %s", took)
}

// Two PostgreSQL nodes: an event accepted by node A arrives on a stream of
// node B, and a resume on B reads what A accepted.
func TestStream_TwoPostgresNodes(t *testing.T) {
	url := pgtest.URL(t)
	a := startStreamNode(t, openPostgres(t, url))
	b := startStreamNode(t, openPostgres(t, url))
	s := openStream(t, b.base, "", "")
	s.notice(t, app.StreamNoticeReady)
	var last uint64
	for i := range 5 {
		node := a
		if i%2 == 1 {
			node = b
		}
		sendTo(t, node.base, fmt.Sprint("c", i), "orders/create", []byte(fmt.Sprintf(`{"c":%d}`, i)))
		e := s.event(t)
		if e.ID != fmt.Sprint("c", i) {
			t.Fatalf("event %d on node B's stream: %+v", i, e)
		}
		if i == 2 {
			last = e.Seq
		}
	}
	r := openStream(t, b.base, "", fmt.Sprint(last))
	for _, want := range []string{"c3", "c4"} {
		if e := r.event(t); e.ID != want {
			t.Fatalf("resumed on B with %+v; want %s", e, want)
		}
	}
	r.notice(t, app.StreamNoticeReady)

	// Concurrent accepts on both nodes commit out of seq order: B's
	// stream still has each once. Fewer than a listener's queue holds,
	// so that a reader slowed by the race detector on a busy machine is
	// not dropped (TestStreamHub_SlowListenerDropped and
	// TestStream_StuckListenerDropped test the drop).
	const events = app.StreamQueue - 16
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node := []*streamNode{a, b}[w%2]
			for i := w; i < events; i += 16 {
				if err := postWebhook(node.base, fmt.Sprint("par", i), "orders/create", []byte(fmt.Sprintf(`{"i":%d}`, i))); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	seen := map[string]int{}
	outOfOrder := 0
	var prev uint64
	for len(seen) < events {
		e := s.event(t)
		if seen[e.ID]++; seen[e.ID] > 1 {
			t.Fatalf("%s twice on B's stream", e.ID)
		}
		if e.Seq < prev {
			outOfOrder++
		}
		prev = max(prev, e.Seq)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d events accepted at once on two nodes, each once on B's stream; %d came after a higher seq (late commits)", events, outOfOrder)
}
