package web

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testGuard is a guard on a clock the test moves, over a login that
// counts its calls and takes "right" for the password.
type testGuard struct {
	*guard
	now   time.Time
	calls atomic.Int64
}

func newTestGuard() *testGuard {
	tg := &testGuard{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	tg.guard = newGuard(func(_, p string) bool { tg.calls.Add(1); return p == "right" }, func() time.Time { return tg.now })
	return tg
}

var (
	addrA = netip.MustParseAddr("203.0.113.7")
	addrB = netip.MustParseAddr("198.51.100.9")
)

func TestGuard_PerClient(t *testing.T) {
	g := newTestGuard()
	for i := range ClientBurst {
		if v, _ := g.check(addrA, "admin", "wrong", true); v != denied {
			t.Fatalf("attempt %d: %v, want denied", i+1, v)
		}
	}
	v, wait := g.check(addrA, "admin", "wrong", true)
	if v != limited || wait <= 0 || wait > ClientRefill {
		t.Fatalf("attempt %d: %v, wait %v; want limited within %v", ClientBurst+1, v, wait, ClientRefill)
	}
	if v, _ := g.check(addrA, "admin", "right", true); v != limited {
		t.Fatalf("the right password over the limit: %v; want limited (nothing is checked)", v)
	}
	if got := g.calls.Load(); got != ClientBurst {
		t.Fatalf("%d password checks; want %d: none past the limit", got, ClientBurst)
	}
	if v, _ := g.check(addrB, "admin", "wrong", true); v != denied {
		t.Fatalf("another address: %v, want denied", v)
	}
	g.now = g.now.Add(wait)
	if v, _ := g.check(addrA, "admin", "right", true); v != granted {
		t.Fatalf("after %v: %v, want granted", wait, v)
	}
}

func TestGuard_Global(t *testing.T) {
	g := newTestGuard()
	failed := 0
	for i := 0; failed < GlobalBurst; i++ {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		for range 3 {
			if v, _ := g.check(a, "admin", "wrong", true); v != denied {
				t.Fatalf("failure %d: %v, want denied", failed+1, v)
			}
			if failed++; failed == GlobalBurst {
				break
			}
		}
	}
	if v, wait := g.check(netip.MustParseAddr("10.9.9.9"), "admin", "right", true); v != limited || wait > GlobalRefill {
		t.Fatalf("a fresh address after %d failures in all: %v, wait %v; want limited", GlobalBurst, v, wait)
	}
	g.now = g.now.Add(GlobalRefill)
	if v, _ := g.check(netip.MustParseAddr("10.9.9.9"), "admin", "right", true); v != granted {
		t.Fatalf("after %v: %v, want granted", GlobalRefill, v)
	}
}

// A right password gives its tokens back: logging in often never locks
// anyone out.
func TestGuard_RightPasswordCostsNothing(t *testing.T) {
	g := newTestGuard()
	for i := range 5 * ClientBurst {
		if v, _ := g.check(addrA, "admin", "right", false); v != granted {
			t.Fatalf("login %d: %v", i+1, v)
		}
	}
	for i := range ClientBurst {
		if v, _ := g.check(addrA, "admin", "wrong", false); v != denied {
			t.Fatalf("failure %d after many logins: %v, want denied", i+1, v)
		}
	}
}

// A verified Basic credential is taken from the cache until CredentialTTL,
// then checked again; a wrong one, or a form login, is never cached.
func TestGuard_CredentialCache(t *testing.T) {
	g := newTestGuard()
	for range 100 {
		if v, _ := g.check(addrA, "admin", "right", true); v != granted {
			t.Fatalf("right password: %v", v)
		}
	}
	if got := g.calls.Load(); got != 1 {
		t.Fatalf("%d password checks for 100 requests; want 1", got)
	}
	if v, _ := g.check(addrA, "admin2", "right", true); v != granted || g.calls.Load() != 2 {
		t.Fatalf("another user with the same password came from the cache")
	}
	for range ClientBurst { // the cache does not let a wrong password in, nor stop counting failures
		g.check(addrA, "admin", "wrong", true)
	}
	if v, _ := g.check(addrA, "admin", "right", true); v != granted {
		t.Fatalf("a cached credential past the failure limit: %v; want granted", v)
	}
	g.now = g.now.Add(CredentialTTL)
	calls := g.calls.Load()
	if v, _ := g.check(addrA, "admin", "right", true); v != granted || g.calls.Load() != calls+1 {
		t.Fatalf("an expired credential: %v after %d checks; want granted after one", v, g.calls.Load()-calls)
	}
	g.check(addrB, "admin", "right", false)
	calls = g.calls.Load()
	g.check(addrB, "admin", "right", false)
	if g.calls.Load() != calls+1 {
		t.Fatal("a form login came from the cache")
	}
}

// IPv6 addresses of one /64 share a bucket.
func TestGuard_IPv6Prefix(t *testing.T) {
	g := newTestGuard()
	for i := range ClientBurst {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i + 1)})
		g.check(a, "admin", "wrong", true)
	}
	if v, _ := g.check(netip.MustParseAddr("2001:db8::ffff:1"), "admin", "wrong", true); v != limited {
		t.Fatalf("another address of the /64: %v; want limited", v)
	}
	if v, _ := g.check(netip.MustParseAddr("2001:db8:0:1::1"), "admin", "wrong", true); v != denied {
		t.Fatalf("another /64: %v; want denied", v)
	}
}

// At most ChecksAtOnce password checks run at a time, however many
// requests arrive together.
func TestGuard_ChecksAtOnce(t *testing.T) {
	var running, most atomic.Int64
	g := newGuard(func(_, p string) bool {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(5 * time.Millisecond)
		running.Add(-1)
		return p == "right"
	}, time.Now)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g.check(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), "admin", "right", false)
		}()
	}
	wg.Wait()
	if got := most.Load(); got != ChecksAtOnce {
		t.Fatalf("%d checks ran at once; want %d", got, ChecksAtOnce)
	}
}

// The addresses remembered are bounded: when full, those whose buckets
// have refilled are forgotten; when none has, a new address is limited.
func TestGuard_ClientsBounded(t *testing.T) {
	g := newTestGuard()
	g.login = func(string, string) bool { return false }
	for i := range maxClients {
		g.global = bucket{} // only the per-address bound is under test
		g.check(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), "admin", "wrong", false)
	}
	g.global = bucket{}
	if v, _ := g.check(addrA, "admin", "wrong", false); v != limited {
		t.Fatalf("a new address with %d remembered: %v; want limited", maxClients, v)
	}
	g.now = g.now.Add(ClientRefill + time.Second)
	g.global = bucket{}
	if v, _ := g.check(addrA, "admin", "wrong", false); v != denied {
		t.Fatalf("after the buckets refilled: %v; want denied", v)
	}
	if n := len(g.clients); n != 1 {
		t.Fatalf("%d addresses remembered after the prune; want 1", n)
	}
}
