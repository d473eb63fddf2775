package apptest_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"hookbox/app/apptest"
)

// fatalTB records a Fatalf and ends the goroutine as testing.T does.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// run calls fn with a fatalTB in a goroutine of its own and returns what
// it failed with ("" when it did not).
func run(fn func(tb testing.TB)) string {
	f := &fatalTB{}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f.msg
}

func TestEventually(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			if msg := run(func(tb testing.TB) {
				apptest.Eventually(tb, time.Second, "half a second", func() bool { return time.Since(start) >= 500*time.Millisecond })
			}); msg != "" {
				t.Fatal(msg)
			}
			if got := time.Since(start); got > 500*time.Millisecond+apptest.Poll {
				t.Fatalf("returned after %v; want within one Poll of the condition", got)
			}
		})
	})
	t.Run("Timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			msg := run(func(tb testing.TB) { apptest.Eventually(tb, time.Second, "never", func() bool { return false }) })
			if !strings.Contains(msg, "never") || !strings.Contains(msg, "1s") {
				t.Fatalf("failed with %q; want it to name what and how long", msg)
			}
			if got := time.Since(start); got < time.Second || got > time.Second+apptest.Poll {
				t.Fatalf("gave up after %v; want 1s", got)
			}
		})
	})
	t.Run("UntilLastError", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			n := 0
			msg := run(func(tb testing.TB) {
				apptest.Until(tb, time.Second, func() error { n++; return fmt.Errorf("seen %d", n) })
			})
			if want := fmt.Sprintf("seen %d", n); !strings.Contains(msg, want) {
				t.Fatalf("failed with %q; want the last error %q", msg, want)
			}
		})
	})
}

func TestSignal(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var s apptest.Signal
			if s.Fired() {
				t.Fatal("fired before Fire")
			}
			time.AfterFunc(time.Second, func() { s.Fire(); s.Fire() }) // the bubble's clock
			if msg := run(func(tb testing.TB) { s.Wait(tb, time.Minute, "the fire") }); msg != "" {
				t.Fatal(msg)
			}
			if !s.Fired() {
				t.Fatal("not fired after Wait")
			}
		})
	})
	t.Run("Timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var s apptest.Signal
			msg := run(func(tb testing.TB) { s.Wait(tb, time.Second, "the fire") })
			if !strings.Contains(msg, "the fire") {
				t.Fatalf("failed with %q; want it to name what", msg)
			}
		})
	})
	t.Run("Recv", func(t *testing.T) {
		ch := make(chan error, 1)
		ch <- errors.New("x")
		if msg := run(func(tb testing.TB) {
			if err := apptest.Recv(tb, ch, time.Second, "an error"); err == nil || err.Error() != "x" {
				tb.Fatalf("got %v", err)
			}
		}); msg != "" {
			t.Fatal(msg)
		}
	})
}
