package dispatch_test

// The dispatcher when its own side fails: attempts that cannot be
// recorded, a recorder behind the senders, a shutdown with sends in
// flight or dials hanging; and answers of every length.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

// failingRecords is a store whose attempts cannot be recorded while
// failing is set, as with a full disk.
type failingRecords struct {
	app.Store
	failing atomic.Bool
}

func (f *failingRecords) RecordAttempts(ctx context.Context, recs []app.AttemptRecord) []error {
	if f.failing.Load() {
		errs := make([]error, len(recs))
		for i := range errs {
			errs[i] = errors.New("write hookbox.db: no space left on device")
		}
		return errs
	}
	return f.Store.RecordAttempts(ctx, recs)
}

// When an attempt cannot be recorded the delivery stays due and goes out
// again; once the disk has room again the next send is recorded as
// delivered, and the event has one delivery. How long after each failed
// record it goes out again is TestDispatcher_UnrecordedWaitsStoreRetry's,
// on a fake clock.
func TestDispatcher_RecordFails(t *testing.T) {
	s := newSink(t, 200)
	store := &failingRecords{}
	store.failing.Store(true)
	h := newHarnessOver(t, destsConfig(`["1h"]`, s.URL), func(db *bboltstore.DB) app.Store { store.Store = db; return store })
	h.disp.StoreRetry = 300 * time.Millisecond

	h.send(t, "unrecorded-1", `{}`)
	for i := range 2 { // the first send, and the same delivery again
		select {
		case <-s.hits:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d sends of a delivery whose attempts could not be recorded; want it sent again", i)
		}
	}

	// The disk has room again: the next send is recorded as delivered.
	store.failing.Store(false)
	h.waitState(t, "unrecorded-1", 0, app.Delivered)
	if ds := h.deliveries(t, "unrecorded-1"); len(ds) != 1 {
		t.Fatalf("deliveries = %+v, want one", ds)
	}
}

// slowRecords is a store whose attempt writes wait for release (a slow
// disk), counting the writes and the attempts they carry.
type slowRecords struct {
	app.Store
	release  chan struct{}
	writes   atomic.Int64
	attempts atomic.Int64
}

func (s *slowRecords) RecordAttempts(ctx context.Context, recs []app.AttemptRecord) []error {
	<-s.release
	s.writes.Add(1)
	s.attempts.Add(int64(len(recs)))
	return s.Store.RecordAttempts(ctx, recs)
}

// A destination's concurrency counts requests in flight: its senders go on
// while the attempts they finished wait for the disk, the attempts are then
// stored together, and Wait returns only once they are.
func TestDispatcher_SendsGoOnWhileAttemptsAreRecorded(t *testing.T) {
	s := newSink(t, 200)
	store := &slowRecords{release: make(chan struct{})}
	h := newHarnessOver(t, faultConfig(faultDest{name: "d", url: s.URL, timeout: "2s", retry: `["1h"]`, concurrency: 2}),
		func(db *bboltstore.DB) app.Store { store.Store = db; return store })
	release := sync.OnceFunc(func() { close(store.release) })
	t.Cleanup(release) // before the harness stops

	const events = 10
	for i := range events {
		h.send(t, fmt.Sprint("rec-", i), `{}`)
	}
	// With 2 slots and no attempt recorded yet, all 10 go out.
	for range events {
		select {
		case <-s.hits:
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d events sent while their attempts waited for the disk", s.requests(), events)
		}
	}
	h.stopRun()
	waited := make(chan struct{})
	go func() { h.disp.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned before the attempts were recorded")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	<-waited
	if n, w := store.attempts.Load(), store.writes.Load(); n != events || w >= events {
		t.Fatalf("%d attempts in %d writes; want %d attempts sharing fewer writes", n, w, events)
	}
	for i := range events {
		ds := h.deliveries(t, fmt.Sprint("rec-", i))
		if len(ds) != 1 || ds[0].State != app.Delivered || ds[0].Attempts != 1 {
			t.Fatalf("event %d: deliveries %+v; want one delivered after one attempt", i, ds)
		}
	}
	if s.requests() != events {
		t.Fatalf("the destination got %d requests for %d events", s.requests(), events)
	}
}

// Shutdown cuts a send in flight to a destination that does not answer,
// instead of waiting for its timeout; the attempt is not recorded, so the
// delivery goes out again after the restart.
func TestDispatcher_ShutdownCutsSendsInFlight(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-r.Context().Done(): // hookbox hung up
		case <-release: // the test is over
		}
	}))
	t.Cleanup(hang.Close)
	h := newHarness(t, faultConfig(faultDest{name: "hang", url: hang.URL, timeout: "1h", retry: `["1h"]`}))
	t.Cleanup(func() { close(release) }) // before the harness stops

	h.send(t, "cut-1", `{}`)
	select {
	case <-arrived:
	case <-time.After(20 * time.Second):
		t.Fatal("the delivery was not sent")
	}
	h.stopRun()
	h.cancelSends() // as serve does when its shutdown grace is over
	waited := make(chan struct{})
	go func() { h.disp.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second): // the destination's timeout is an hour
		t.Fatal("Wait still waits for a send to a destination that does not answer")
	}
	if ds := h.deliveries(t, "cut-1"); len(ds) != 1 || ds[0].State != app.Pending || ds[0].Attempts != 0 {
		t.Fatalf("deliveries = %+v; want one pending, no attempt recorded", ds)
	}
}

// Answers of every length, with a Content-Length, chunked or running until
// the connection closes: the first MaxResponseSnippet bytes are kept; an
// answer that ends within 64 KiB more is read to its end and its
// connection carries the next delivery; a longer one is not read further,
// its connection is closed and the attempt says so. The status stands
// either way.
func TestDispatcher_AnswerLengths(t *testing.T) {
	const drain = 64 << 10
	for _, tt := range []struct {
		name    string
		length  int
		framing string // "length", "chunked" or "close"
		reused  bool
		cut     bool
	}{
		{"Empty", 0, "length", true, false},
		{"Snippet", app.MaxResponseSnippet, "length", true, false},
		{"Drained", app.MaxResponseSnippet + drain, "length", true, false},
		{"OneTooMany", app.MaxResponseSnippet + drain + 1, "length", false, true},
		{"Declared4GiB", 1 << 32, "length", false, true},
		{"ChunkedDrained", 40 << 10, "chunked", true, false},
		{"ChunkedLong", 1 << 20, "chunked", false, true},
		{"UntilCloseShort", 100, "close", false, false},
		{"UntilCloseLong", 1 << 20, "close", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var conns atomic.Int64
			var written atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				var out io.Writer = w
				switch tt.framing {
				case "length":
					w.Header().Set("Content-Length", fmt.Sprint(tt.length))
					w.WriteHeader(202)
				case "chunked":
					w.WriteHeader(202)
				case "close": // no length, no chunks: the body ends with the connection
					c, buf, err := http.NewResponseController(w).Hijack()
					if err != nil {
						t.Error(err)
						return
					}
					defer c.Close()
					buf.WriteString("HTTP/1.1 202 Accepted\r\nConnection: close\r\n\r\n")
					buf.Flush()
					out = c
				}
				chunk := make([]byte, 32<<10)
				for left := tt.length; left > 0; {
					n, err := out.Write(chunk[:min(left, len(chunk))])
					written.Add(int64(n))
					left -= n
					if err != nil {
						return
					}
				}
			}))
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			t.Cleanup(srv.Close)
			h := newHarness(t, faultConfig(faultDest{name: "d", url: srv.URL, timeout: "10s", retry: `[]`, concurrency: 1}))
			for _, id := range []string{"len-1", "len-2"} {
				h.send(t, id, `{}`)
				h.waitState(t, id, 0, app.Delivered)
				as := h.attempts(t, id, 0)
				a := as[len(as)-1]
				if a.Status != 202 || len(a.Response) != min(tt.length, app.MaxResponseSnippet) {
					t.Fatalf("%s: status %d, %d bytes kept", id, a.Status, len(a.Response))
				}
				if cut := strings.Contains(a.Error, "not read"); cut != tt.cut {
					t.Errorf("%s: attempt error %q, want a cut answer: %v", id, a.Error, tt.cut)
				}
			}
			if reused := conns.Load() == 1; reused != tt.reused {
				t.Errorf("%d connections for two deliveries; want the connection reused: %v", conns.Load(), tt.reused)
			}
			if n := written.Load(); n > 16<<20 {
				t.Errorf("the destination could write %d bytes", n)
			}
		})
	}
}

// A destination whose TCP connect hangs (its accept queue is full, as a
// blackholed address would): shutdown cancels the dial at once instead of
// waiting for the destination's timeout, and records nothing, so the
// delivery goes out again after the restart.
func TestDispatcher_ShutdownCancelsDials(t *testing.T) {
	addr := hangingAddr(t, 0)
	h := newHarness(t, faultConfig(faultDest{name: "hang", url: "http://" + addr + "/hook", timeout: "1h", retry: `["1h"]`}))
	h.send(t, "dial-1", `{}`)
	waitConnecting(t, addr, 20*time.Second)
	start := time.Now()
	h.stopRun() // the shutdown begins; the send grace has not run out
	waited := make(chan struct{})
	go func() { h.disp.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(20 * time.Second): // the destination's timeout is an hour
		t.Fatal("Wait still waits for a connect that hangs")
	}
	t.Logf("the dial was cut %v after the stop began", time.Since(start).Round(time.Millisecond))
	if ds := h.deliveries(t, "dial-1"); len(ds) != 1 || ds[0].State != app.Pending || ds[0].Attempts != 0 {
		t.Fatalf("deliveries = %+v; want one pending, no attempt recorded", ds)
	}
}

// An attempt whose result cannot be recorded waits longer each time it
// goes out again (StoreRetry, doubling, capped at StoreRetryMax), instead
// of being sent every StoreRetry for as long as the disk is full.
func TestDispatcher_RecordFailsBacksOff(t *testing.T) {
	s := newSink(t, 200)
	store := &failingRecords{}
	store.failing.Store(true)
	h := newHarnessOver(t, destsConfig(`["1h"]`, s.URL), func(db *bboltstore.DB) app.Store { store.Store = db; return store })
	h.disp.StoreRetry, h.disp.StoreRetryMax = 100*time.Millisecond, 400*time.Millisecond

	h.send(t, "unrecorded-1", `{}`)
	var at []time.Time
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.hits:
			at = append(at, time.Now())
		case <-time.After(time.Until(deadline)):
		}
	}
	gaps := gaps(at)
	t.Logf("%d sends in 3 s while attempts could not be recorded, gaps %v", len(at), gaps)
	// 0, 0.1, 0.3, 0.7, then every 0.4 s: 9 or so; a fixed 100 ms gives 30.
	if len(at) < 4 || len(at) > 11 {
		t.Fatalf("%d sends in 3 s; want the waits to grow to the cap", len(at))
	}
	if gaps[0] > gaps[2] || gaps[len(gaps)-1] < 300*time.Millisecond {
		t.Fatalf("gaps %v; want them growing to 400 ms", gaps)
	}
	store.failing.Store(false)
	h.waitState(t, "unrecorded-1", 0, app.Delivered)
}
