package alert_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app/alert"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
)

// alertConfig is a config whose alerts go to url.
func alertConfig(url string) string {
	return fmt.Sprintf("[alerts]\nurl = %q\ndead_letters_over = 0\n[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"s\"\n", url)
}

func newAlerter(t *testing.T, url string) *alert.Alerter {
	t.Helper()
	cfg, err := config.Parse("t.toml", alertConfig(url), nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return alert.New(cfg, db)
}

// An alert URL that answers with endless headers or a declared 4 GiB body:
// the post fails or ends within the alert timeout, having read only a
// bounded part of the answer.
func TestAlerter_HugeAnswers(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer string
		ok     bool
	}{
		{"EndlessHeaders", "HTTP/1.1 200 OK\r\n", false},
		{"DeclaredHugeBody", "HTTP/1.1 200 OK\r\nContent-Length: 4294967296\r\n\r\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var written atomic.Int64
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						defer c.Close()
						buf := make([]byte, 4096)
						c.Read(buf) // the request (small)
						io.WriteString(c, tt.answer)
						line := []byte("X-Filler: " + strings.Repeat("y", 1000) + "\r\n")
						if tt.ok {
							line = make([]byte, 32<<10)
						}
						for written.Load() < 1<<30 {
							n, err := c.Write(line)
							written.Add(int64(n))
							if err != nil {
								return
							}
						}
					}()
				}
			}()
			a := newAlerter(t, "http://"+ln.Addr().String()+"/alert")
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			a.Backup(context.Background(), errors.New("disk full")) // posts a message
			took := time.Since(start)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%s: the post took %v, allocated %d KiB; the alert URL wrote %d bytes", tt.name, took, alloc>>10, written.Load())
			if took > 15*time.Second {
				t.Errorf("the post took %v", took)
			}
			if alloc > 8<<20 {
				t.Errorf("the post allocated %d MiB reading the answer", alloc>>20)
			}
		})
	}
}

// Notify never blocks and never starts a goroutine per message: with the
// alert URL hanging, a thousand notifications from a hundred goroutines
// return at once, at most one post is in flight, and repeated messages of
// one topic are sent once per interval.
func TestAlerter_NotifyHangingURL(t *testing.T) {
	var mu sync.Mutex
	var texts []string
	var inflight, most atomic.Int64
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		select {
		case arrived <- struct{}{}:
		default:
		}
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		texts = append(texts, string(raw))
		mu.Unlock()
		<-release
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { close(release); srv.Close() })

	a := newAlerter(t, "http://"+ln.Addr().String()+"/alert")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	// Each caller stays alive once its calls returned, so that what is
	// counted then is the callers and what the alerter started: a
	// goroutine per message would hang on the URL and be counted.
	base := runtime.NumGoroutine()
	var wg, called sync.WaitGroup
	hold := make(chan struct{})
	called.Add(100)
	for g := range 100 {
		wg.Go(func() {
			for i := range 10 {
				a.Notify(fmt.Sprintf("topic-%d", (g*10+i)%50), "certificate trouble")
			}
			called.Done()
			<-hold
		})
	}
	returned := make(chan struct{})
	go func() { called.Wait(); close(returned) }()
	select {
	case <-returned:
	case <-time.After(10 * time.Second):
		t.Fatal("Notify blocked on the hanging alert URL")
	}
	if n := runtime.NumGoroutine(); n > base+100+10 {
		t.Errorf("%d goroutines once the 1,000 notifications returned, %d before and 100 callers", n, base)
	}
	close(hold)
	wg.Wait()
	// The first post may still be on its way: wait for it, then no other
	// may have started while it hangs.
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no alert posted within 10 s")
	}
	if most.Load() != 1 {
		t.Errorf("%d posts in flight at once, want 1", most.Load())
	}
}

// A topic is sent at most once per interval; other topics are not held
// back by it.
func TestAlerter_NotifyRateLimit(t *testing.T) {
	posted := make(chan string, 10)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		posted <- string(raw)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	a := newAlerter(t, "http://"+ln.Addr().String()+"/alert")
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a.Now = func() time.Time { return now }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	a.Notify("renewal", "renewal failed 1")
	a.Notify("renewal", "renewal failed 2")
	a.Notify("expiry", "expires soon")
	now = now.Add(alert.NotifyEvery + time.Second)
	a.Notify("renewal", "renewal failed 3")
	// Run posts what Notify queued, one at a time and in order: had
	// "failed 2" been queued, it would be the second post.
	var got []string
	for _, want := range []string{"failed 1", "expires soon", "failed 3"} {
		select {
		case text := <-posted:
			got = append(got, text)
			if !strings.Contains(text, want) {
				t.Fatalf("sent %q, want %q next", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("sent %q, then nothing within 10 s (want %q)", got, want)
		}
	}
}
