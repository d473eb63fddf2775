// The Access service: who is calling (a user's password, a token), whether
// a session taken earlier still holds, and the audited changes of users
// and tokens.

package app

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// AccessPoll is how often Watch looks for changes of users and tokens
// made elsewhere (another node, the command line): a removed user's
// sessions end within it.
const AccessPoll = 500 * time.Millisecond

// tokenTouchEvery is how often a token's last use is written.
const tokenTouchEvery = time.Minute

// Identity is who a request comes from.
type Identity struct {
	Name string
	Role Role
	// Token says a token, not a user.
	Token bool
	// Fixed says the user of [status] password in the config.
	Fixed bool
	stamp uint64
}

// Actor is the identity as the audit log names it: the user's name, or
// "token:NAME".
func (id Identity) Actor() string {
	if id.Token {
		return "token:" + id.Name
	}
	return id.Name
}

// Who is the actor of an audited action: who, how, from where.
type Who struct{ Actor, Via, From string }

// Entry is the audit entry of action on target by w: its result is ok
// when err is nil, else failed with err's client-safe message.
func (w Who) Entry(action, target, detail string, err error) AuditEntry {
	e := AuditEntry{Actor: w.Actor, Via: w.Via, From: w.From, Action: action, Target: target, Detail: detail, Result: AuditOK}
	if err != nil {
		e.Result = AuditFailed
		msg := ErrorMessage(err)
		if ErrorCode(err) == EINTERNAL {
			msg = "internal error (see the log)"
		}
		if e.Detail != "" {
			msg = e.Detail + "; " + msg
		}
		e.Detail = msg
	}
	return e
}

// Access checks logins and tokens against the users and tokens of the
// store, kept in memory and refreshed when the store's version changes,
// and makes the audited changes to them. The user of [status] password (or
// password_env), when set, is an admin whose password is the config's.
type Access struct {
	store AccessStore // nil: only the config's user
	audit AuditStore  // nil: nothing recorded
	user  string      // [status] user
	fixed string      // [status] password

	snap    atomic.Pointer[accessSnap]
	refresh sync.Mutex
	touchMu sync.Mutex
	touched map[string]time.Time // token name → last write of its last use
	// missed is when a token not in memory last made a refresh (unix ns):
	// one made a moment ago on another node or by the CLI on PostgreSQL
	// works at once, and unknown tokens read the store at most once per
	// tokenMissRefresh.
	missed atomic.Int64

	Now    func() time.Time
	Logger *slog.Logger
}

type accessSnap struct {
	version uint64
	users   map[string]*User
	tokens  map[[32]byte]*Token
	byName  map[string]*Token
	// changed is closed when a newer snapshot replaces this one.
	changed chan struct{}
}

// NewAccess reads the users and tokens of store (nil: only the config's
// user, if any); it creates none (Ensure does). audit may be nil.
func NewAccess(ctx context.Context, cfg StatusConfig, store AccessStore, audit AuditStore, logger *slog.Logger) (*Access, error) {
	if logger == nil {
		logger = slog.With("component", "access")
	}
	a := &Access{store: store, audit: audit, user: cfg.User, fixed: cfg.Password, touched: map[string]time.Time{},
		Now: time.Now, Logger: logger}
	a.snap.Store(&accessSnap{users: map[string]*User{}, tokens: map[[32]byte]*Token{}, byName: map[string]*Token{}, changed: make(chan struct{})})
	if store != nil {
		if err := a.load(ctx); err != nil {
			return nil, fmt.Errorf("read the users and tokens: %w", err)
		}
	}
	return a, nil
}

// FixedAccess is an Access with only the user user and its password: a
// server without a store's users (tests, and the config's password).
func FixedAccess(user, password string) *Access {
	a, _ := NewAccess(context.Background(), StatusConfig{User: user, Password: password}, nil, nil, nil)
	return a
}

// Ensure makes sure someone can log in: without a password in the config,
// the store's first user is made once (AccessStore.EnsureFirstUser): the
// status password of an older hookbox, or a generated one that is logged
// (the only secret ever logged, on purpose: it is how the merchant learns
// it) before its hash is stored, so that there is never a stored password
// nobody was shown.
func (a *Access) Ensure(ctx context.Context) error {
	if a.fixed != "" || a.store == nil {
		return nil
	}
	_, err := a.store.EnsureFirstUser(ctx, a.user, a.Now(), func() ([]byte, error) {
		pw := generatePassword()
		hash, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
		if err != nil {
			return nil, fmt.Errorf("hash the status password: %w", err)
		}
		a.Logger.Warn("generated a status page password for the admin user; it is shown only this once (hookbox passwd sets another; [status] password_env chooses one)",
			"user", a.user, "password", pw)
		return hash, nil
	})
	if err != nil {
		return fmt.Errorf("make the first user: %w", err)
	}
	return a.load(ctx)
}

// Refresh takes up changes of users and tokens made elsewhere: it reads
// the store's version and, when it moved, every user and token.
func (a *Access) Refresh(ctx context.Context) error {
	if a.store == nil {
		return nil
	}
	v, err := a.store.AccessVersion(ctx)
	if err != nil {
		return err
	}
	if v == a.snap.Load().version {
		return nil
	}
	return a.load(ctx)
}

// Watch refreshes every AccessPoll until ctx ends; a read that fails
// keeps what is in use (the storage health reports the store).
func (a *Access) Watch(ctx context.Context) {
	t := time.NewTicker(AccessPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.Refresh(ctx)
		}
	}
}

func (a *Access) load(ctx context.Context) error {
	a.refresh.Lock()
	defer a.refresh.Unlock()
	d, err := a.store.LoadAccess(ctx)
	if err != nil {
		return err
	}
	s := &accessSnap{version: d.Version, users: make(map[string]*User, len(d.Users)),
		tokens: make(map[[32]byte]*Token, len(d.Tokens)), byName: make(map[string]*Token, len(d.Tokens)), changed: make(chan struct{})}
	for i := range d.Users {
		u := &d.Users[i]
		s.users[u.Name] = u
	}
	for i := range d.Tokens {
		t := &d.Tokens[i]
		s.tokens[t.Hash] = t
		s.byName[t.Name] = t
	}
	close(a.snap.Swap(s).changed) // under refresh: closed once
	return nil
}

// dummyHash is compared against when no such user exists, so that the
// time of a check does not tell whether the name is a user's.
var dummyHash = sync.OnceValue(func() []byte {
	h, _ := bcrypt.GenerateFromPassword([]byte("no such user, no such password"), bcrypt.DefaultCost)
	return h
})

// CheckPassword returns the identity of user when password is theirs.
func (a *Access) CheckPassword(user, password string) (Identity, bool) {
	if a.fixed != "" && equalConst(user, a.user) {
		if equalConst(password, a.fixed) {
			return Identity{Name: a.user, Role: RoleAdmin, Fixed: true}, true
		}
		return Identity{}, false
	}
	u := a.snap.Load().users[user]
	if u == nil {
		bcrypt.CompareHashAndPassword(dummyHash(), []byte(password))
		return Identity{}, false
	}
	if bcrypt.CompareHashAndPassword(u.Hash, []byte(password)) != nil {
		return Identity{}, false
	}
	return Identity{Name: u.Name, Role: u.Role, stamp: u.Stamp}, true
}

// CheckToken returns the identity of a token's secret, if it is a token
// that exists and has not expired; it records the use.
func (a *Access) CheckToken(secret string) (Identity, bool) {
	if !LooksLikeToken(secret) {
		return Identity{}, false
	}
	hash := TokenHash(secret)
	t := a.snap.Load().tokens[hash]
	now := a.Now()
	if t == nil && a.refreshOnMiss(now) {
		t = a.snap.Load().tokens[hash]
	}
	if t == nil || t.Expired(now) {
		return Identity{}, false
	}
	a.touch(t.Name, now)
	return Identity{Name: t.Name, Role: t.Role, Token: true, stamp: t.Stamp}, true
}

// tokenMissRefresh is how often a token not in memory may make a refresh.
const tokenMissRefresh = 100 * time.Millisecond

// refreshOnMiss refreshes the users and tokens from the store, unless a
// miss did so less than tokenMissRefresh ago, and reports whether it did.
func (a *Access) refreshOnMiss(now time.Time) bool {
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
func (a *Access) touch(name string, now time.Time) {
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
func (a *Access) Current(id Identity) bool { return a.gone(a.snap.Load(), id) == "" }

// Hold returns a context that ends, with a cause that says why (an Error
// EUNAUTHORIZED), as soon as id no longer holds (Current): when the users
// and tokens in use change (here at once, from another node or the command
// line within AccessPoll, through Watch) or when its token expires. It
// waits on those signals, not on a poll; cancel releases it. Long-lived
// answers (the stream) end with it.
func (a *Access) Hold(parent context.Context, id Identity) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		expiry := time.NewTimer(time.Hour)
		defer expiry.Stop()
		for {
			s := a.snap.Load() // before the check: a change after it closes s.changed
			if why := a.gone(s, id); why != "" {
				cancel(Errorf(EUNAUTHORIZED, "%s", why))
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
func (a *Access) gone(s *accessSnap, id Identity) string {
	switch {
	case id.Fixed:
		if a.fixed != "" && id.Name == a.user {
			return ""
		}
		return "the config's user changed"
	case id.Token:
		t := s.byName[id.Name]
		switch {
		case t == nil:
			return fmt.Sprintf("the token %s was revoked", id.Name)
		case t.Stamp != id.stamp:
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
	case u.Stamp != id.stamp:
		return fmt.Sprintf("the user %s's role or password changed: log in again", id.Name)
	}
	return ""
}

// Users returns the users, by name, without their hashes; the config's
// user comes first when it has a password there.
func (a *Access) Users() []User {
	s := a.snap.Load()
	var out []User
	if a.fixed != "" {
		out = append(out, User{Name: a.user, Role: RoleAdmin})
	}
	names := make([]string, 0, len(s.users))
	for n := range s.users {
		if a.fixed == "" || n != a.user {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		u := *s.users[n]
		u.Hash = nil
		out = append(out, u)
	}
	return out
}

// Tokens returns the tokens, by name.
func (a *Access) Tokens() []Token {
	s := a.snap.Load()
	out := make([]Token, 0, len(s.byName))
	for _, t := range s.byName {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PasswordInConfig reports whether user's password is the config's.
func (a *Access) PasswordInConfig(user string) bool { return a.fixed != "" && user == a.user }

// Record appends e to the audit log; a failure is logged, not returned:
// the action it records is done.
func (a *Access) Record(ctx context.Context, e AuditEntry) {
	if a.audit == nil {
		return
	}
	if e.At.IsZero() {
		e.At = a.Now()
	}
	e = CleanAuditEntry(e)
	if err := a.audit.AppendAudit(ctx, e); err != nil {
		a.Logger.Error("audit entry not recorded", "action", e.Action, "actor", e.Actor, slog.Any("error", err))
	}
}

// noSuch answers err, a store's answer to a change of the user or token
// name, with the name cleaned (CleanName) when there is no such user or
// token: the name came with the request and goes into the answer and the
// audit log.
func noSuch(kind, name string, err error) error {
	if ErrorCode(err) == ENOTFOUND {
		return Errorf(ENOTFOUND, "no %s %q", kind, CleanName(name))
	}
	return err
}

// errNoStore answers a change when there is no store of users.
var errNoStore = Errorf(EFORBIDDEN, "users and tokens are not kept here")

// AddUser creates the user name with role and the password of hash.
func (a *Access) AddUser(ctx context.Context, who Who, name string, role Role, hash []byte) error {
	err := a.addUser(ctx, name, role, hash)
	a.Record(ctx, who.Entry(AuditUserAdd, CleanName(name), "role "+role.String(), err))
	return err
}

func (a *Access) addUser(ctx context.Context, name string, role Role, hash []byte) error {
	if a.store == nil {
		return errNoStore
	}
	if err := ValidAccessName("user", name); err != nil {
		return err
	}
	if role == RoleNone {
		return Errorf(EINVALID, "the user needs a role: viewer, operator or admin")
	}
	if a.PasswordInConfig(name) {
		return Errorf(ECONFLICT, "%s is the user of [status] password in the config", name)
	}
	if err := ValidPasswordHash(hash); err != nil {
		return Errorf(EINVALID, "password hash: %v", err)
	}
	now := a.Now()
	if err := a.store.CreateUser(ctx, User{Name: name, Role: role, Hash: hash, Created: now, Changed: now}); err != nil {
		return err
	}
	return a.load(ctx)
}

// RemoveUser removes the user name; the last admin stays.
func (a *Access) RemoveUser(ctx context.Context, who Who, name string) error {
	err := a.removeUser(ctx, name)
	a.Record(ctx, who.Entry(AuditUserRemove, CleanName(name), "", err))
	return err
}

func (a *Access) removeUser(ctx context.Context, name string) error {
	if a.store == nil {
		return errNoStore
	}
	if err := a.store.RemoveUser(ctx, name, a.adminGuard()); err != nil {
		return noSuch("user", name, err)
	}
	return a.load(ctx)
}

// SetRole gives the user name role.
func (a *Access) SetRole(ctx context.Context, who Who, name string, role Role) error {
	detail := "to " + role.String()
	if u := a.snap.Load().users[name]; u != nil {
		detail = u.Role.String() + " to " + role.String()
	}
	err := a.setRole(ctx, name, role)
	a.Record(ctx, who.Entry(AuditUserRole, CleanName(name), detail, err))
	return err
}

func (a *Access) setRole(ctx context.Context, name string, role Role) error {
	if a.store == nil {
		return errNoStore
	}
	if role == RoleNone {
		return Errorf(EINVALID, "want a role: viewer, operator or admin")
	}
	if a.PasswordInConfig(name) {
		return Errorf(ECONFLICT, "%s is the user of [status] password in the config: always an admin", name)
	}
	if err := a.load(ctx); err != nil {
		return err
	}
	if u := a.snap.Load().users[name]; u != nil && u.Role == role {
		return nil // nothing changes: the user's sessions go on
	}
	// The store checks the last admin in the transaction that writes:
	// a check here, on what was read before, lets two admins demote each
	// other at once.
	if err := a.store.SetUserRole(ctx, name, role, a.Now(), a.adminGuard()); err != nil {
		return noSuch("user", name, err)
	}
	return a.load(ctx)
}

// adminGuard is what the store keeps of the last admin: with a password
// in the config, its user is an admin whatever the store holds, so the
// store's last admin may go.
func (a *Access) adminGuard() AdminGuard {
	if a.fixed != "" {
		return AdminInConfig
	}
	return KeepAdmin
}

// SetPassword changes the password of the user name to hash's.
func (a *Access) SetPassword(ctx context.Context, who Who, name string, hash []byte) error {
	err := a.setPassword(ctx, name, hash)
	a.Record(ctx, who.Entry(AuditUserPassword, CleanName(name), "", err))
	return err
}

func (a *Access) setPassword(ctx context.Context, name string, hash []byte) error {
	if a.PasswordInConfig(name) {
		return Errorf(ECONFLICT, "%s", ErrPasswordInConfig.Error())
	}
	if a.store == nil {
		return errNoStore
	}
	if err := ValidPasswordHash(hash); err != nil {
		return Errorf(EINVALID, "password hash: %v", err)
	}
	if err := a.store.SetUserPassword(ctx, name, hash, a.Now()); err != nil {
		return noSuch("user", name, err)
	}
	return a.load(ctx)
}

// CreateToken makes the token name with role, expiring after ttl (0:
// never), and returns its secret: shown once, never kept.
func (a *Access) CreateToken(ctx context.Context, who Who, name string, role Role, ttl time.Duration) (string, error) {
	secret := NewTokenSecret()
	err := a.AddToken(ctx, who, name, role, TokenHash(secret), ttl)
	if err != nil {
		return "", err
	}
	return secret, nil
}

// AddToken stores the token name of a secret hashed elsewhere (hookbox
// token create hands the running server only the hash).
func (a *Access) AddToken(ctx context.Context, who Who, name string, role Role, hash [32]byte, ttl time.Duration) error {
	detail := "role " + role.String()
	now := a.Now()
	t := Token{Name: name, Role: role, Hash: hash, Created: now, CreatedBy: who.Actor}
	if ttl > 0 {
		t.Expires = now.Add(ttl)
		detail += ", expires " + t.Expires.UTC().Format(time.RFC3339)
	}
	err := a.addToken(ctx, t)
	a.Record(ctx, who.Entry(AuditTokenCreate, CleanName(name), detail, err))
	return err
}

func (a *Access) addToken(ctx context.Context, t Token) error {
	if a.store == nil {
		return errNoStore
	}
	if err := ValidAccessName("token", t.Name); err != nil {
		return err
	}
	if t.Role == RoleNone {
		return Errorf(EINVALID, "the token needs a role: viewer, operator or admin")
	}
	if err := a.store.CreateToken(ctx, t); err != nil {
		return err
	}
	return a.load(ctx)
}

// RevokeToken removes the token name: it stops working at once here and
// within AccessPoll on every node.
func (a *Access) RevokeToken(ctx context.Context, who Who, name string) error {
	err := a.revokeToken(ctx, name)
	a.Record(ctx, who.Entry(AuditTokenRevoke, CleanName(name), "", err))
	return err
}

func (a *Access) revokeToken(ctx context.Context, name string) error {
	if a.store == nil {
		return errNoStore
	}
	if err := a.store.RevokeToken(ctx, name); err != nil {
		return noSuch("token", name, err)
	}
	return a.load(ctx)
}
