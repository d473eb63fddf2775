package app_test

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

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
)

// alertConfig is a config whose alerts go to url.
func alertConfig(url string) string {
	return fmt.Sprintf("[alerts]\nurl = %q\ndead_letters_over = 0\n[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"s\"\n", url)
}

func newAlerter(t *testing.T, url string) *app.Alerter {
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
	return app.NewAlerter(cfg, db)
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

	base := runtime.NumGoroutine()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 100 {
		wg.Go(func() {
			for i := range 10 {
				a.Notify(fmt.Sprintf("topic-%d", (g*10+i)%50), "certificate trouble")
			}
		})
	}
	wg.Wait()
	if took := time.Since(start); took > time.Second {
		t.Errorf("1,000 notifications took %v", took)
	}
	// The goroutines of the calls are gone once they return; any the
	// alerter started for them must end too: polled, with a deadline.
	for deadline := time.Now().Add(3 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := runtime.NumGoroutine()
		if n <= base+10 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("%d goroutines after the notifications, %d before", n, base)
			break
		}
	}
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
	var mu sync.Mutex
	var texts []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		mu.Lock()
		texts = append(texts, string(raw))
		mu.Unlock()
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
	now = now.Add(app.NotifyEvery + time.Second)
	a.Notify("renewal", "renewal failed 3")
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		got := strings.Join(texts, "|")
		n := len(texts)
		mu.Unlock()
		if n >= 3 {
			if n != 3 || !strings.Contains(got, "failed 1") || !strings.Contains(got, "expires soon") || !strings.Contains(got, "failed 3") {
				t.Fatalf("sent %q", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sent %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
