package web

import (
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"hookbox/app"
)

// testGuard is a guard on a clock the test moves, over a login that
// counts its calls and takes "right" for the password.
type testGuard struct {
	*guard
	now   time.Time
	calls atomic.Int64
	// ended names the users whose identity no longer holds.
	ended map[string]bool
}

func newTestGuard() *testGuard {
	tg := &testGuard{now: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), ended: map[string]bool{}}
	tg.guard = newGuard(func(u, p string) (app.Identity, bool) {
		tg.calls.Add(1)
		return app.Identity{Name: u, Role: app.RoleViewer}, p == "right"
	}, func(id app.Identity) bool { return !tg.ended[id.Name] }, func() time.Time { return tg.now })
	return tg
}

// try is check without the identity.
func (g *guard) try(client netip.Addr, user, password string, cache bool) (verdict, time.Duration) {
	v, _, _, wait := g.check(client, user, password, cache)
	return v, wait
}

var (
	addrA = netip.MustParseAddr("203.0.113.7")
	addrB = netip.MustParseAddr("198.51.100.9")
)

func TestGuard_PerClient(t *testing.T) {
	g := newTestGuard()
	for i := range ClientBurst {
		if v, _ := g.try(addrA, "admin", "wrong", true); v != denied {
			t.Fatalf("attempt %d: %v, want denied", i+1, v)
		}
	}
	v, wait := g.try(addrA, "admin", "wrong", true)
	if v != limited || wait <= 0 || wait > ClientRefill {
		t.Fatalf("attempt %d: %v, wait %v; want limited within %v", ClientBurst+1, v, wait, ClientRefill)
	}
	if v, _ := g.try(addrA, "admin", "right", true); v != limited {
		t.Fatalf("the right password over the limit: %v; want limited (nothing is checked)", v)
	}
	if got := g.calls.Load(); got != ClientBurst {
		t.Fatalf("%d password checks; want %d: none past the limit", got, ClientBurst)
	}
	if v, _ := g.try(addrB, "ops", "wrong", true); v != denied {
		t.Fatalf("another address: %v, want denied", v)
	}
	g.now = g.now.Add(wait)
	if v, _ := g.try(addrA, "admin", "right", true); v != granted {
		t.Fatalf("after %v: %v, want granted", wait, v)
	}
}

func TestGuard_Global(t *testing.T) {
	g := newTestGuard()
	failed := 0
	for i := 0; failed < GlobalBurst; i++ {
		a := netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
		for range 3 {
			if v, _ := g.try(a, fmt.Sprint("user", failed), "wrong", true); v != denied {
				t.Fatalf("failure %d: %v, want denied", failed+1, v)
			}
			if failed++; failed == GlobalBurst {
				break
			}
		}
	}
	if v, wait := g.try(netip.MustParseAddr("10.9.9.9"), "admin", "right", true); v != limited || wait > GlobalRefill {
		t.Fatalf("a fresh address after %d failures in all: %v, wait %v; want limited", GlobalBurst, v, wait)
	}
	g.now = g.now.Add(GlobalRefill)
	if v, _ := g.try(netip.MustParseAddr("10.9.9.9"), "admin", "right", true); v != granted {
		t.Fatalf("after %v: %v, want granted", GlobalRefill, v)
	}
}

// A right password gives its tokens back: logging in often never locks
// anyone out.
func TestGuard_RightPasswordCostsNothing(t *testing.T) {
	g := newTestGuard()
	for i := range 5 * ClientBurst {
		if v, _ := g.try(addrA, "admin", "right", false); v != granted {
			t.Fatalf("login %d: %v", i+1, v)
		}
	}
	for i := range ClientBurst {
		if v, _ := g.try(addrA, "admin", "wrong", false); v != denied {
			t.Fatalf("failure %d after many logins: %v, want denied", i+1, v)
		}
	}
}

// A verified Basic credential is taken from the cache until CredentialTTL,
// then checked again; a wrong one, or a form login, is never cached.
func TestGuard_CredentialCache(t *testing.T) {
	g := newTestGuard()
	for range 100 {
		if v, _ := g.try(addrA, "admin", "right", true); v != granted {
			t.Fatalf("right password: %v", v)
		}
	}
	if got := g.calls.Load(); got != 1 {
		t.Fatalf("%d password checks for 100 requests; want 1", got)
	}
	if v, _ := g.try(addrA, "admin2", "right", true); v != granted || g.calls.Load() != 2 {
		t.Fatalf("another user with the same password came from the cache")
	}
	for range ClientBurst { // the cache does not let a wrong password in, nor stop counting failures
		g.try(addrA, "admin", "wrong", true)
	}
	if v, _ := g.try(addrA, "admin", "right", true); v != granted {
		t.Fatalf("a cached credential past the failure limit: %v; want granted", v)
	}
	g.now = g.now.Add(CredentialTTL)
	calls := g.calls.Load()
	if v, _ := g.try(addrA, "admin", "right", true); v != granted || g.calls.Load() != calls+1 {
		t.Fatalf("an expired credential: %v after %d checks; want granted after one", v, g.calls.Load()-calls)
	}
	g.try(addrB, "admin", "right", false)
	calls = g.calls.Load()
	g.try(addrB, "admin", "right", false)
	if g.calls.Load() != calls+1 {
		t.Fatal("a form login came from the cache")
	}
}

// IPv6 addresses of one /64 share a bucket.
func TestGuard_IPv6Prefix(t *testing.T) {
	g := newTestGuard()
	for i := range ClientBurst {
		a := netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 15: byte(i + 1)})
		g.try(a, "admin", "wrong", true)
	}
	if v, _ := g.try(netip.MustParseAddr("2001:db8::ffff:1"), "admin", "wrong", true); v != limited {
		t.Fatalf("another address of the /64: %v; want limited", v)
	}
	if v, _ := g.try(netip.MustParseAddr("2001:db8:0:1::1"), "ops", "wrong", true); v != denied {
		t.Fatalf("another /64: %v; want denied", v)
	}
}

// At most ChecksAtOnce password checks run at a time, however many
// requests arrive together.
func TestGuard_ChecksAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var running, most atomic.Int64
		gate := make(chan struct{})
		g := newGuard(func(u, p string) (app.Identity, bool) {
			n := running.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-gate // a check in progress until every request has come
			running.Add(-1)
			return app.Identity{Name: u}, p == "right"
		}, func(app.Identity) bool { return true }, time.Now)
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.try(netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}), "admin", "right", false)
			}()
		}
		synctest.Wait() // every request is in a check or waiting for a slot
		if got := running.Load(); got != ChecksAtOnce {
			t.Fatalf("%d checks running with 20 requests waiting; want %d", got, ChecksAtOnce)
		}
		close(gate)
		wg.Wait()
		if got := most.Load(); got != ChecksAtOnce {
			t.Fatalf("%d checks ran at once; want %d", got, ChecksAtOnce)
		}
	})
}

// The addresses remembered are bounded: when full, those whose buckets
// have refilled are forgotten; when none has, a new address is limited.
func TestGuard_ClientsBounded(t *testing.T) {
	g := newTestGuard()
	g.login = func(string, string) (app.Identity, bool) { return app.Identity{}, false }
	for i := range maxClients {
		g.global = bucket{} // only the per-address bound is under test
		g.try(netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}), fmt.Sprint("u", i), "wrong", false)
	}
	g.global = bucket{}
	if v, _ := g.try(addrA, "admin", "wrong", false); v != limited {
		t.Fatalf("a new address with %d remembered: %v; want limited", maxClients, v)
	}
	g.now = g.now.Add(ClientRefill + time.Second)
	g.global = bucket{}
	if v, _ := g.try(addrA, "admin", "wrong", false); v != denied {
		t.Fatalf("after the buckets refilled: %v; want denied", v)
	}
	if n := len(g.clients); n != 1 {
		t.Fatalf("%d addresses remembered after the prune; want 1", n)
	}
}

// Failures are counted per user name too, from any address.
func TestGuard_PerUser(t *testing.T) {
	g := newTestGuard()
	for i := range UserBurst {
		if v, _ := g.try(netip.AddrFrom4([4]byte{10, 1, 0, byte(i)}), "admin", "wrong", false); v != denied {
			t.Fatalf("attempt %d: %v, want denied", i+1, v)
		}
	}
	g.global = bucket{} // only the per-user bound is under test
	if v, wait := g.try(netip.AddrFrom4([4]byte{10, 2, 0, 1}), "admin", "right", false); v != limited || wait <= 0 || wait > UserRefill {
		t.Fatalf("a fresh address for a user over the limit: %v, wait %v; want limited within %v", v, wait, UserRefill)
	}
	g.global = bucket{}
	if v, _ := g.try(netip.AddrFrom4([4]byte{10, 2, 0, 1}), "ops", "wrong", false); v != denied {
		t.Fatalf("another user: %v, want denied", v)
	}
}

// A flood of random user names does not grow the memory past maxUsers:
// when full, the names whose buckets refilled are forgotten, and a new
// one is limited until then.
func TestGuard_UsersBounded(t *testing.T) {
	g := newTestGuard()
	for i := range maxUsers {
		g.global = bucket{}
		g.clients = map[netip.Addr]*bucket{} // only the per-user bound is under test
		g.try(addrA, fmt.Sprintf("random-%d", i), "wrong", false)
	}
	g.global, g.clients = bucket{}, map[netip.Addr]*bucket{}
	if v, _ := g.try(addrA, "one-more", "wrong", false); v != limited {
		t.Fatalf("a new name with %d remembered: %v; want limited", maxUsers, v)
	}
	if n := len(g.users); n > maxUsers {
		t.Fatalf("%d names remembered; want at most %d", n, maxUsers)
	}
	g.now = g.now.Add(UserRefill + time.Second)
	g.global, g.clients = bucket{}, map[netip.Addr]*bucket{}
	if v, _ := g.try(addrA, "one-more", "wrong", false); v != denied {
		t.Fatalf("after the buckets refilled: %v; want denied", v)
	}
	if n := len(g.users); n != 1 {
		t.Fatalf("%d names remembered after the prune; want 1", n)
	}
}

// A cached credential whose identity no longer holds (removed user, new
// role or password) is dropped and the password checked again.
func TestGuard_CachedIdentityEnds(t *testing.T) {
	g := newTestGuard()
	if v, id, checked, _ := g.check(addrA, "ops", "right", true); v != granted || !checked || id.Name != "ops" {
		t.Fatalf("first login: %v checked=%v %+v", v, checked, id)
	}
	if v, _, checked, _ := g.check(addrA, "ops", "right", true); v != granted || checked {
		t.Fatalf("second login: %v checked=%v; want granted from the cache", v, checked)
	}
	g.ended["ops"] = true
	if v, _, checked, _ := g.check(addrA, "ops", "right", true); !checked {
		t.Fatalf("after the identity ended: %v from the cache; want checked again", v)
	}
	if n := len(g.credentials); n != 1 {
		t.Fatalf("%d credentials cached; want 1 (the one checked again)", n)
	}
}
