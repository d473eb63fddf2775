// Package access is team access, a service over the domain: who is
// calling (a user's password, a token: check.go), whether a session taken
// earlier still holds, the audited changes of users and tokens
// (change.go), the command line's requests to a running server
// (request.go) and the audit log as read (audit.go). Who may do which
// action is the domain's table (app/roles.go); the users, tokens and audit
// entries are kept by the domain's stores.
package access

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"

	"hookbox/app"
)

// Poll is how often Watch looks for changes of users and tokens
// made elsewhere (another node, the command line): a removed user's
// sessions end within it.
const Poll = 500 * time.Millisecond

// tokenTouchEvery is how often a token's last use is written.
const tokenTouchEvery = time.Minute

// Service checks logins and tokens against the users and tokens of the
// store, kept in memory and refreshed when the store's version changes,
// and makes the audited changes to them. The user of [status] password (or
// password_env), when set, is an admin whose password is the config's.
type Service struct {
	store app.AccessStore // nil: only the config's user
	audit app.AuditStore  // nil: nothing recorded
	user  string          // [status] user
	fixed string          // [status] password
	// fixedStamp is the Stamp of the config's user (fixedStamp), made
	// once, at its first use.
	fixedStamp func() uint64

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
	users   map[string]*app.User
	tokens  map[[32]byte]*app.Token
	byName  map[string]*app.Token
	// changed is closed when a newer snapshot replaces this one.
	changed chan struct{}
}

// New reads the users and tokens of store (nil: only the config's
// user, if any); it creates none (Ensure does). audit may be nil.
func New(ctx context.Context, cfg app.StatusConfig, store app.AccessStore, audit app.AuditStore, logger *slog.Logger) (*Service, error) {
	if logger == nil {
		logger = slog.With("component", "access")
	}
	a := &Service{store: store, audit: audit, user: cfg.User, fixed: cfg.Password, touched: map[string]time.Time{},
		Now: time.Now, Logger: logger}
	a.fixedStamp = sync.OnceValue(func() uint64 { return fixedStamp(cfg.User, cfg.Password) })
	a.snap.Store(&accessSnap{users: map[string]*app.User{}, tokens: map[[32]byte]*app.Token{}, byName: map[string]*app.Token{}, changed: make(chan struct{})})
	if store != nil {
		if err := a.load(ctx); err != nil {
			return nil, fmt.Errorf("read the users and tokens: %w", err)
		}
	}
	return a, nil
}

// Fixed is a Service with only the user user and its password: a
// server without a store's users (tests, and the config's password).
func Fixed(user, password string) *Service {
	a, _ := New(context.Background(), app.StatusConfig{User: user, Password: password}, nil, nil, nil)
	return a
}

// Ensure makes sure someone can log in: without a password in the config,
// the store's first user is made once (AccessStore.EnsureFirstUser): the
// status password of an older hookbox, or a generated one that is logged
// (the only secret ever logged, on purpose: it is how the merchant learns
// it) before its hash is stored, so that there is never a stored password
// nobody was shown.
func (a *Service) Ensure(ctx context.Context) error {
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
func (a *Service) Refresh(ctx context.Context) error {
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

// Watch refreshes every Poll until ctx ends; a read that fails
// keeps what is in use (the storage health reports the store).
func (a *Service) Watch(ctx context.Context) {
	t := time.NewTicker(Poll)
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

func (a *Service) load(ctx context.Context) error {
	a.refresh.Lock()
	defer a.refresh.Unlock()
	d, err := a.store.LoadAccess(ctx)
	if err != nil {
		return err
	}
	s := &accessSnap{version: d.Version, users: make(map[string]*app.User, len(d.Users)),
		tokens: make(map[[32]byte]*app.Token, len(d.Tokens)), byName: make(map[string]*app.Token, len(d.Tokens)), changed: make(chan struct{})}
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

// Users returns the users, by name, without their hashes; the config's
// user comes first when it has a password there.
func (a *Service) Users() []app.User {
	s := a.snap.Load()
	var out []app.User
	if a.fixed != "" {
		out = append(out, app.User{Name: a.user, Role: app.RoleAdmin})
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
func (a *Service) Tokens() []app.Token {
	s := a.snap.Load()
	out := make([]app.Token, 0, len(s.byName))
	for _, t := range s.byName {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// PasswordInConfig reports whether user's password is the config's.
func (a *Service) PasswordInConfig(user string) bool { return a.fixed != "" && user == a.user }

// Record appends e to the audit log; a failure is logged, not returned:
// the action it records is done.
func (a *Service) Record(ctx context.Context, e app.AuditEntry) {
	if a.audit == nil {
		return
	}
	if e.At.IsZero() {
		e.At = a.Now()
	}
	e = app.CleanAuditEntry(e)
	if err := a.audit.AppendAudit(ctx, e); err != nil {
		a.Logger.Error("audit entry not recorded", "action", e.Action, "actor", e.Actor, slog.Any("error", err))
	}
}
