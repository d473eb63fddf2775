// Who is calling: a user's password or a token's secret checked against
// the users and tokens in memory, and whether an identity taken earlier
// (a session, a cached credential, a stream) still holds.

package access

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/crypto/bcrypt"

	"hookbox/app"
)

// dummyHash is compared against when no such user exists, so that the
// time of a check does not tell whether the name is a user's.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("no such user, no such password"), bcrypt.DefaultCost)
	return h
})

// CheckPassword returns the identity of user when password is theirs.
func (a *Service) CheckPassword(user, password string) (app.Identity, bool) {
	if a.fixed != "" && equalConst(user, a.user) {
		if equalConst(password, a.fixed) {
			return app.Identity{Name: a.user, Role: app.RoleAdmin, Fixed: true, Stamp: a.fixedStamp()}, true
		}
		return app.Identity{}, false
	}
	u := a.snap.Load().users[user]
	if u == nil {
		bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return app.Identity{}, false
	}
	if bcrypt.CompareHashAndPassword(u.Hash, []byte(password)) != nil {
		return app.Identity{}, false
	}
	return app.Identity{Name: u.Name, Role: u.Role, Stamp: u.Stamp}, true
}

// CheckToken returns the identity of a token's secret, if it is a token
// that exists and has not expired; it records the use.
func (a *Service) CheckToken(secret string) (app.Identity, bool) {
	if !app.LooksLikeToken(secret) {
		return app.Identity{}, false
	}
	hash := app.TokenHash(secret)
	t := a.snap.Load().tokens[hash]
	now := a.Now()
	if t == nil && a.refreshOnMiss(now) {
		t = a.snap.Load().tokens[hash]
	}
	if t == nil || t.Expired(now) {
		return app.Identity{}, false
	}
	a.touch(t.Name, now)
	return app.Identity{Name: t.Name, Role: t.Role, Token: true, Stamp: t.Stamp}, true
}

// tokenMissRefresh is how often a token not in memory may make a refresh.
const tokenMissRefresh = 100 * time.Millisecond

// refreshOnMiss refreshes the users and tokens from the store, unless a
// miss did so less than tokenMissRefresh ago, and reports whether it did.
func (a *Service) refreshOnMiss(now time.Time) bool {
	last := a.missed.Load()
	if a.store == nil || now.UnixNano()-last < int64(tokenMissRefresh) || !a.missed.CompareAndSwap(last, now.UnixNano()) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return a.Refresh(ctx) == nil
}

// touch writes a token's last use, at most once per tokenTouchEvery per
// token, off the request's path.
func (a *Service) touch(name string, now time.Time) {
	a.touchMu.Lock()
	last, ok := a.touched[name]
	if ok && now.Sub(last) < tokenTouchEvery {
		a.touchMu.Unlock()
		return
	}
	if len(a.touched) > 4*len(a.snap.Load().byName)+16 { // forget revoked ones
		clear(a.touched)
	}
	a.touched[name] = now
	a.touchMu.Unlock()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.store.TouchToken(ctx, name, now.Truncate(time.Minute)); err != nil {
			a.Logger.Debug("token's last use not recorded", "token", name, slog.Any("error", err))
		}
	}()
}

// Current reports whether id still holds: its user or token exists,
// unchanged since id was taken, and has not expired. Sessions and cached
// credentials end when it says no.
func (a *Service) Current(id app.Identity) bool { return a.gone(a.snap.Load(), id) == "" }

// Hold returns a context that ends, with a cause that says why (an Error
// EUNAUTHORIZED), as soon as id no longer holds (Current): when the users
// and tokens in use change (here at once, from another node or the command
// line within Poll, through Watch) or when its token expires. It
// waits on those signals, not on a poll; cancel releases it. Long-lived
// answers (the stream) end with it.
func (a *Service) Hold(parent context.Context, id app.Identity) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		expiry := time.NewTimer(time.Hour)
		defer expiry.Stop()
		for {
			s := a.snap.Load() // before the check: a change after it closes s.changed
			if why := a.gone(s, id); why != "" {
				cancel(app.Errorf(app.EUNAUTHORIZED, "%s", why))
				return
			}
			var expires <-chan time.Time
			if t := s.byName[id.Name]; id.Token && !t.Expires.IsZero() {
				expiry.Reset(t.Expires.Sub(a.Now()))
				expires = expiry.C
			}
			select {
			case <-ctx.Done():
				return
			case <-s.changed:
			case <-expires:
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// gone says why id no longer holds in s ("": it holds); Current in words.
func (a *Service) gone(s *accessSnap, id app.Identity) string {
	switch {
	case id.Local: // the kernel named it on a connection that is still open
		return ""
	case id.Fixed:
		switch {
		case a.fixed == "" || id.Name != a.user:
			return "the config's user changed"
		case id.Stamp != a.fixedStamp():
			return "the config's password changed: log in again"
		}
		return ""
	case id.Token:
		t := s.byName[id.Name]
		switch {
		case t == nil:
			return fmt.Sprintf("the token %s was revoked", id.Name)
		case t.Stamp != id.Stamp:
			return fmt.Sprintf("the token %s was revoked and made again", id.Name)
		case t.Expired(a.Now()):
			return fmt.Sprintf("the token %s expired", id.Name)
		}
		return ""
	}
	u := s.users[id.Name]
	switch {
	case u == nil:
		return fmt.Sprintf("the user %s was removed", id.Name)
	case u.Stamp != id.Stamp:
		return fmt.Sprintf("the user %s's role or password changed: log in again", id.Name)
	}
	return ""
}
