// The status page's sessions, kept by the store (app.SessionStore) so that
// a restart or a reload logs nobody out, and on PostgreSQL every node knows
// them.

package access

import (
	"context"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/binary"
	"log/slog"
	"sync"
	"time"

	"hookbox/app"
)

// SessionCache is how long a node trusts a session it read from the store
// before it reads it again: a logout on another node ends the session here
// within it. A change of the user's role or password, or their removal,
// ends it sooner on this node and within Poll on the others (the
// identity's stamp no longer holds, Current), whatever the cache says.
const SessionCache = time.Second

// maxCachedSessions bounds the cache; past it, the cache starts again
// empty (it only saves reads).
const maxCachedSessions = 1024

// sessionSweep is how many expired sessions a login deletes on its way.
const sessionSweep = 100

// Sessions makes, finds and ends the status page's sessions. The browser
// holds a session's token; the store keeps only its SHA-256
// (app.SessionHash), who logged in and until when. A session holds until
// its expiry (app.SessionTTL), its logout, or a change that ends its
// identity (Service.Current: the user's role or password changed, the
// user was removed, the config's password changed).
type Sessions struct {
	store  app.SessionStore
	access *Service

	mu    sync.Mutex
	cache map[[sha256.Size]byte]cachedSession

	Now    func() time.Time
	Logger *slog.Logger
}

type cachedSession struct {
	s    app.Session
	read time.Time
}

// NewSessions returns the sessions kept in store, whose identities a
// checks.
func NewSessions(store app.SessionStore, a *Service) *Sessions {
	return &Sessions{store: store, access: a, cache: map[[sha256.Size]byte]cachedSession{}, Now: time.Now,
		Logger: slog.With("component", "access")}
}

// Start stores a new session of id and returns its token (for the
// browser's cookie only) and its expiry. Expired sessions are deleted on
// the way, a few at a time.
func (ss *Sessions) Start(ctx context.Context, id app.Identity) (token string, expires time.Time, err error) {
	now := ss.Now()
	if n, err := ss.store.DeleteExpiredSessions(ctx, now, sessionSweep); err != nil {
		ss.Logger.Warn("expired sessions not deleted", slog.Any("error", err))
	} else if n > 0 {
		ss.Logger.Debug("expired sessions deleted", "sessions", n)
	}
	token = app.NewSessionToken()
	s := app.Session{Hash: app.SessionHash(token), ID: id, Created: now, Expires: now.Add(app.SessionTTL)}
	if err := ss.store.CreateSession(ctx, s); err != nil {
		return "", time.Time{}, err
	}
	ss.remember(s, now)
	return token, s.Expires, nil
}

// Find returns the identity of the session of token when it holds. One
// that expired or whose identity ended is deleted. A session is read from
// the store at most once per SessionCache on this node.
func (ss *Sessions) Find(ctx context.Context, token string) (app.Identity, bool, error) {
	hash := app.SessionHash(token)
	now := ss.Now()
	ss.mu.Lock()
	c, ok := ss.cache[hash]
	ss.mu.Unlock()
	if !ok || now.Sub(c.read) >= SessionCache || now.Before(c.read) {
		s, found, err := ss.store.FindSession(ctx, hash)
		if err != nil {
			return app.Identity{}, false, err
		}
		if !found {
			ss.forget(hash)
			return app.Identity{}, false, nil
		}
		c = ss.remember(s, now)
	}
	if c.s.Expired(now) || !ss.access.Current(c.s.ID) {
		ss.end(ctx, hash)
		return app.Identity{}, false, nil
	}
	return c.s.ID, true, nil
}

// Hold is Service.Hold for a caller that came with the session of token:
// the context also ends, with a cause that says why, once the session no
// longer holds: logged out (on any node) or expired. It looks every
// SessionCache, so such a stream ends within twice SessionCache (a look,
// and on another node the cache before it); a change of the identity ends
// it at once, as Service.Hold does.
func (ss *Sessions) Hold(parent context.Context, token string, id app.Identity) (context.Context, context.CancelFunc) {
	held, release := ss.access.Hold(parent, id)
	ctx, cancel := context.WithCancelCause(held)
	go func() {
		defer release()
		t := time.NewTicker(SessionCache)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if _, ok, err := ss.Find(ctx, token); err == nil && !ok && ctx.Err() == nil {
				// The identity's own end reads better when both came.
				if why := ss.access.gone(ss.access.snap.Load(), id); why != "" {
					cancel(app.Errorf(app.EUNAUTHORIZED, "%s", why))
				} else {
					cancel(app.Errorf(app.EUNAUTHORIZED, "the session was logged out or expired"))
				}
				return
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// End ends the session of token (a logout), here at once and on the other
// nodes within SessionCache.
func (ss *Sessions) End(ctx context.Context, token string) error {
	hash := app.SessionHash(token)
	ss.forget(hash)
	return ss.store.DeleteSession(ctx, hash)
}

// end deletes a session that no longer holds; a failure is logged: the
// session is refused anyway, and a later look deletes it.
func (ss *Sessions) end(ctx context.Context, hash [sha256.Size]byte) {
	ss.forget(hash)
	if err := ss.store.DeleteSession(ctx, hash); err != nil {
		ss.Logger.Warn("ended session not deleted", slog.Any("error", err))
	}
}

func (ss *Sessions) remember(s app.Session, now time.Time) cachedSession {
	c := cachedSession{s: s, read: now}
	ss.mu.Lock()
	if len(ss.cache) >= maxCachedSessions {
		clear(ss.cache)
	}
	ss.cache[s.Hash] = c
	ss.mu.Unlock()
	return c
}

func (ss *Sessions) forget(hash [sha256.Size]byte) {
	ss.mu.Lock()
	delete(ss.cache, hash)
	ss.mu.Unlock()
}

// fixedStampRounds is the PBKDF2 work of the config password's stamp:
// computed once per process, and what a stored session reveals of the
// password is 64 bits of a slow, salted hash.
const fixedStampRounds = 100_000

// fixedStamp is the Stamp of the config's user: derived from its name and
// password, so that a session of that user survives a restart with the
// same password and ends when the config's password changed.
func fixedStamp(user, password string) uint64 {
	k, err := pbkdf2.Key(sha256.New, password, []byte("hookbox session stamp\x00"+user), fixedStampRounds, 8)
	if err != nil { // only in FIPS mode with a short password: no session survives a restart
		return 0
	}
	return binary.BigEndian.Uint64(k)
}
