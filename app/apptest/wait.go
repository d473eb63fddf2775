package apptest

import (
	"sync"
	"testing"
	"time"
)

// Poll is how often Eventually and Until check their condition: often
// enough that a test does not wait long after the thing happened, rarely
// enough that a condition reading a log or asking the API costs little.
const Poll = 10 * time.Millisecond

// Eventually waits until cond holds, checking it every Poll, and fails the
// test naming what if it still does not hold after within. It is for the
// things a test cannot hook: a log line of the real program, an answer of
// its API, a file, a listener. Each check costs what cond costs, however
// many came before.
func Eventually(tb testing.TB, within time.Duration, what string, cond func() bool) {
	tb.Helper()
	Until(tb, within, func() error {
		if cond() {
			return nil
		}
		return errNotYet(what)
	})
}

// Until waits until check returns nil, calling it every Poll, and fails
// the test with check's last error if it has not returned nil after
// within: the error says what was seen, not only what was awaited.
func Until(tb testing.TB, within time.Duration, check func() error) {
	tb.Helper()
	UntilEvery(tb, within, Poll, check)
}

// UntilEvery is Until checking every interval: shorter than Poll for a
// state that lasts only moments (a temporary file), longer for a check
// that costs much.
func UntilEvery(tb testing.TB, within, every time.Duration, check func() error) {
	tb.Helper()
	deadline := time.Now().Add(within)
	for {
		err := check()
		if err == nil {
			return
		}
		if !time.Now().Before(deadline) {
			tb.Fatalf("waited %v: %v", within, err)
		}
		time.Sleep(every)
	}
}

// Within reports whether cond came to hold within, checking it every
// Poll, without failing the test: for a caller that reports what it got
// either way.
func Within(within time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(Poll) {
		if cond() {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
	}
}

type errNotYet string

func (e errNotYet) Error() string { return string(e) }

// Signal is an event a test waits on: a hook of the code under test, a
// fake server's handler or a goroutine fires it, the test waits for it
// with a deadline. Firing it again does nothing; the zero value is ready.
type Signal struct {
	once sync.Once
	mu   sync.Mutex
	ch   chan struct{}
}

func (s *Signal) done() chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Fire marks the event as happened and wakes every waiter.
func (s *Signal) Fire() {
	ch := s.done()
	s.once.Do(func() { close(ch) })
}

// Done is closed once the event happened, for a select.
func (s *Signal) Done() <-chan struct{} { return s.done() }

// Fired reports whether the event happened, without waiting.
func (s *Signal) Fired() bool {
	select {
	case <-s.done():
		return true
	default:
		return false
	}
}

// Wait waits for the event, failing the test naming what if it has not
// happened after within.
func (s *Signal) Wait(tb testing.TB, within time.Duration, what string) {
	tb.Helper()
	Recv(tb, s.Done(), within, what)
}

// Recv receives one value from ch, failing the test naming what if none
// came within: for a test server or hook that sends what it saw.
func Recv[T any](tb testing.TB, ch <-chan T, within time.Duration, what string) T {
	tb.Helper()
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case v := <-ch:
		return v
	case <-t.C:
		tb.Fatalf("waited %v: %s", within, what)
		panic("unreachable") // Fatalf does not return
	}
}
