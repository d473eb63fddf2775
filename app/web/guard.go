package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"net/netip"
	"strings"
	"sync"
	"time"

	"hookbox/app"
)

// Limits on password checks, so that guessing, from one address or from
// many, cannot take the CPU that ingest needs: a generated status password
// is checked with bcrypt, about 50 ms of a core each time.
const (
	// ClientBurst failed logins are allowed from one address (an IPv6
	// /64), then one more every ClientRefill.
	ClientBurst  = 5
	ClientRefill = 10 * time.Second
	// UserBurst failed logins are allowed for one user name, from any
	// address, then one more every UserRefill: guesses spread over many
	// hosts at one user are slowed too.
	UserBurst  = 5
	UserRefill = 10 * time.Second
	// GlobalBurst failed logins are allowed from all addresses together,
	// then one more every GlobalRefill: at most about 5% of a core spent
	// on wrong passwords, however many hosts guess.
	GlobalBurst  = 10
	GlobalRefill = time.Second
	// ChecksAtOnce password checks run at a time; another waits for its
	// turn at most CheckWait, then is answered 429.
	ChecksAtOnce = 1
	CheckWait    = 2 * time.Second
	// CredentialTTL is how long a verified Basic credential is taken
	// without checking the password again, so that a script does not pay
	// bcrypt on every request.
	CredentialTTL = time.Minute
	// LimitedDelay holds the 429 answer to an attempt over the limits.
	// The connection stays open that long (bounded by max_connections and
	// max_connections_per_ip), but a client that guesses in a closed loop
	// gets one answer a second per connection instead of thousands, which
	// would take the CPU that ingest needs.
	LimitedDelay = time.Second

	maxCredentials = 64    // verified credentials cached
	maxClients     = 10000 // addresses whose failures are remembered
	maxUsers       = 10000 // user names whose failures are remembered
	maxUserKey     = 64    // bytes of a name counted (longer names share a bucket)
)

// verdict is what a password check came to.
type verdict int

const (
	granted verdict = iota + 1 // right user and password
	denied                     // wrong: counted against the client and in all
	limited                    // not checked: over a limit (answer 429)
)

// guard runs password checks under the limits above. Every attempt first
// takes a token from its client's bucket and from the global one, so that
// a guesser is stopped before any bcrypt runs; a right password gives the
// tokens back. Sessions and cached credentials never get here.
type guard struct {
	login func(user, password string) (app.Identity, bool)
	// current says whether an identity still holds: a cached credential
	// whose identity does not (removed user, new role or password) is
	// dropped and checked again.
	current func(app.Identity) bool
	now     func() time.Time
	slots   chan struct{}
	key     [32]byte // keys the digests of cached credentials

	mu          sync.Mutex
	global      bucket
	clients     map[netip.Addr]*bucket
	users       map[string]*bucket
	pruned      time.Time
	credentials map[[sha256.Size]byte]credential
}

// credential is a verified Basic credential: who it is, until when.
type credential struct {
	id      app.Identity
	expires time.Time
}

func newGuard(login func(string, string) (app.Identity, bool), current func(app.Identity) bool, now func() time.Time) *guard {
	g := &guard{login: login, current: current, now: now, slots: make(chan struct{}, ChecksAtOnce),
		clients: map[netip.Addr]*bucket{}, users: map[string]*bucket{}, credentials: map[[sha256.Size]byte]credential{}}
	rand.Read(g.key[:])
	return g
}

// bucket is a token bucket: burst tokens, refilled one per every.
type bucket struct {
	tokens float64
	at     time.Time
}

// refill brings b up to now and reports whether it has a token, or else
// how long until it will.
func (b *bucket) refill(now time.Time, burst int, every time.Duration) (bool, time.Duration) {
	if b.at.IsZero() {
		b.tokens = float64(burst)
	} else if now.After(b.at) {
		b.tokens = min(float64(burst), b.tokens+float64(now.Sub(b.at))/float64(every))
	}
	b.at = now
	if b.tokens >= 1 {
		return true, 0
	}
	return false, time.Duration((1 - b.tokens) * float64(every))
}

// clientKey is the address failures are counted under: IPv6 hosts get a
// /64 each, so one host cannot spread its guesses over its addresses.
func clientKey(a netip.Addr) netip.Addr {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.Addr()
	}
	return a
}

// check verifies user and password for a request from client. A Basic
// credential (cache true) verified less than CredentialTTL ago, whose
// identity still holds, is granted without a check (checked false).
// Otherwise the attempt needs a token from the client's bucket, the user
// name's and the global one, then a slot; it is limited when it gets
// neither, with how long to wait (a second at least).
func (g *guard) check(client netip.Addr, user, password string, cache bool) (v verdict, id app.Identity, checked bool, wait time.Duration) {
	var digest [sha256.Size]byte
	if cache {
		m := hmac.New(sha256.New, g.key[:])
		m.Write([]byte(user))
		m.Write([]byte{0})
		m.Write([]byte(password))
		m.Sum(digest[:0])
		g.mu.Lock()
		cr, ok := g.credentials[digest]
		g.mu.Unlock()
		if ok && g.now().Before(cr.expires) && g.current(cr.id) {
			return granted, cr.id, false, 0
		}
		if ok {
			g.mu.Lock()
			delete(g.credentials, digest)
			g.mu.Unlock()
		}
	}
	key, name := clientKey(client), userKey(user)
	if ok, wait := g.take(key, name); !ok {
		return limited, app.Identity{}, false, max(wait, time.Second)
	}
	select {
	case g.slots <- struct{}{}:
	default:
		t := time.NewTimer(CheckWait)
		select {
		case g.slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			g.giveBack(key, name)
			return limited, app.Identity{}, false, time.Second
		}
	}
	id, ok := g.login(user, password)
	<-g.slots
	if !ok {
		return denied, app.Identity{}, true, 0
	}
	g.giveBack(key, name)
	if cache {
		g.remember(digest, id)
	}
	return granted, id, true, 0
}

// userKey is the user name failures are counted under, cut so that long
// names cost no more memory than short ones.
func userKey(user string) string {
	if len(user) > maxUserKey {
		user = user[:maxUserKey]
	}
	return user
}

// take spends a token of the client's bucket, one of the user name's and
// one of the global bucket, or none.
func (g *guard) take(key netip.Addr, user string) (bool, time.Duration) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if (len(g.clients) >= maxClients || len(g.users) >= maxUsers) && !g.prune(now) {
		return false, ClientRefill
	}
	b := g.clients[key]
	if b == nil {
		b = &bucket{}
		g.clients[key] = b
	}
	u := g.users[user]
	if u == nil {
		u = &bucket{}
		g.users[strings.Clone(user)] = u
	}
	cok, cwait := b.refill(now, ClientBurst, ClientRefill)
	uok, uwait := u.refill(now, UserBurst, UserRefill)
	gok, gwait := g.global.refill(now, GlobalBurst, GlobalRefill)
	if !cok || !uok || !gok {
		return false, max(cwait, uwait, gwait)
	}
	b.tokens--
	u.tokens--
	g.global.tokens--
	return true, 0
}

// giveBack returns the tokens of an attempt that turned out right, or
// that never ran.
func (g *guard) giveBack(key netip.Addr, user string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b := g.clients[key]; b != nil {
		b.tokens = min(ClientBurst, b.tokens+1)
	}
	if b := g.users[user]; b != nil {
		b.tokens = min(UserBurst, b.tokens+1)
	}
	g.global.tokens = min(GlobalBurst, g.global.tokens+1)
}

// prune forgets the clients and user names whose buckets are full again
// (as good as never seen), at most once a second; it reports whether
// there is room. Called with g.mu held.
func (g *guard) prune(now time.Time) bool {
	if now.Sub(g.pruned) >= time.Second {
		g.pruned = now
		for k, b := range g.clients {
			if b.tokens+float64(now.Sub(b.at))/float64(ClientRefill) >= ClientBurst {
				delete(g.clients, k)
			}
		}
		for k, b := range g.users {
			if b.tokens+float64(now.Sub(b.at))/float64(UserRefill) >= UserBurst {
				delete(g.users, k)
			}
		}
	}
	return len(g.clients) < maxClients && len(g.users) < maxUsers
}

// remember caches a verified credential's digest until CredentialTTL from
// now, dropping expired ones when the cache is full.
func (g *guard) remember(digest [sha256.Size]byte, id app.Identity) {
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.credentials) >= maxCredentials {
		for k, cr := range g.credentials {
			if !now.Before(cr.expires) || len(g.credentials) >= maxCredentials {
				delete(g.credentials, k)
			}
		}
	}
	g.credentials[digest] = credential{id: id, expires: now.Add(CredentialTTL)}
}
