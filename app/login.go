package app

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// MetaStore is what Login needs of the store: small settings kept by
// name, such as the generated password's hash.
type MetaStore interface {
	// Meta returns the value kept under name, nil when there is none.
	Meta(ctx context.Context, name string) ([]byte, error)
	// SetMeta keeps value under name, durably.
	SetMeta(ctx context.Context, name string, value []byte) error
}

// PasswordHashKey is the meta name under which the status password's
// bcrypt hash is kept (the password itself is never stored).
const PasswordHashKey = "status_password_bcrypt"

const passwordHashKey = PasswordHashKey

// Login checks the status page's user and password. With [status]
// password (or password_env) it compares against that. Without, it checks
// the bcrypt hash kept in the store, which Ensure creates at the first
// start (once the server is listening, so that the password it logs is the
// one of a server that runs) and hookbox passwd replaces.
type Login struct {
	user   string
	fixed  string
	store  MetaStore
	hash   atomic.Pointer[[]byte]
	gen    atomic.Uint64 // counts the changes of hash after the first
	Logger *slog.Logger
}

// NewLogin reads the stored hash, if any; it generates nothing.
func NewLogin(ctx context.Context, cfg StatusConfig, store MetaStore, logger *slog.Logger) (*Login, error) {
	if logger == nil {
		logger = slog.With("component", "status")
	}
	l := &Login{user: cfg.User, fixed: cfg.Password, store: store, Logger: logger}
	if l.fixed != "" {
		return l, nil
	}
	hash, err := store.Meta(ctx, passwordHashKey)
	if err != nil {
		return nil, fmt.Errorf("read the status password: %w", err)
	}
	if hash != nil {
		l.hash.Store(&hash)
	}
	return l, nil
}

// Ensure makes sure a password exists: without one in the config or the
// store, it generates one, logs it (the only secret ever logged, on
// purpose: it is how the merchant learns it) and stores its hash. It is
// logged before it is stored: should the store fail, this start stops and
// the next one generates and shows a new one, so there is never a stored
// password nobody was shown.
func (l *Login) Ensure(ctx context.Context) error {
	if l.fixed != "" || l.hash.Load() != nil {
		return nil
	}
	pw := generatePassword()
	hash, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
	if err != nil {
		return fmt.Errorf("hash the status password: %w", err)
	}
	l.Logger.Warn("generated a status page password; it is shown only this once (hookbox passwd sets another; [status] password_env chooses one)",
		"user", l.user, "password", pw)
	if err := l.store.SetMeta(ctx, passwordHashKey, hash); err != nil {
		return fmt.Errorf("store the status password: %w", err)
	}
	l.hash.Store(&hash)
	return nil
}

// Check reports whether user and password are the status login.
func (l *Login) Check(user, password string) bool {
	uok := equalConst(user, l.user)
	if l.fixed != "" {
		pok := equalConst(password, l.fixed) // both, so the time does not tell which was wrong
		return uok && pok
	}
	h := l.hash.Load()
	if h == nil {
		return false
	}
	pok := bcrypt.CompareHashAndPassword(*h, []byte(password)) == nil
	return uok && pok
}

// Set stores hash as the new status password and uses it from now on.
func (l *Login) Set(ctx context.Context, hash []byte) error {
	if l.fixed != "" {
		return ErrPasswordInConfig
	}
	if err := ValidPasswordHash(hash); err != nil {
		return err
	}
	if err := l.store.SetMeta(ctx, passwordHashKey, hash); err != nil {
		return fmt.Errorf("store the status password: %w", err)
	}
	l.hash.Store(&hash)
	l.gen.Add(1)
	return nil
}

// Generation changes each time the password does after the start, so
// that sessions and cached credentials of the old one end.
func (l *Login) Generation() uint64 { return l.gen.Load() }

// refresh takes up a hash another process stored (hookbox passwd on a
// shared PostgreSQL database, or another node).
func (l *Login) refresh(ctx context.Context) {
	hash, err := l.store.Meta(ctx, passwordHashKey)
	if err != nil || hash == nil || ValidPasswordHash(hash) != nil {
		return // a read that fails keeps the hash in use; the storage health reports the store
	}
	if old := l.hash.Load(); old == nil || string(*old) != string(hash) {
		l.hash.Store(&hash)
		if old != nil {
			l.gen.Add(1)
			l.Logger.Info("status password changed in the store (hookbox passwd, or another node)")
		}
	}
}

// Watch, until ctx ends, takes up every second a new password: a request
// that hookbox passwd left in dataDir (bbolt, whose file this server
// holds; "" to look for none) and a hash another process stored. With a
// password in the config it does nothing.
func (l *Login) Watch(ctx context.Context, dataDir string) {
	if l.fixed != "" {
		return
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if dataDir != "" {
			l.takeRequest(ctx, dataDir)
		}
		l.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// TakeRequest stores a pending request of hookbox passwd in dataDir, if
// any; serve calls it once at start, before Ensure, so a request made
// while the server was stopping is not lost.
func (l *Login) TakeRequest(ctx context.Context, dataDir string) {
	if l.fixed == "" {
		l.takeRequest(ctx, dataDir)
	}
}

func (l *Login) takeRequest(ctx context.Context, dataDir string) {
	hash, err := readPasswordRequest(dataDir)
	switch {
	case errors.Is(err, errNoRequest):
		return
	case err != nil:
		l.Logger.Warn("password request refused", slog.Any("error", err))
		refusePasswordRequest(dataDir)
		return
	}
	if err := l.Set(ctx, hash); err != nil {
		l.Logger.Error("password request not stored; it is tried again", slog.Any("error", err))
		return
	}
	removePasswordRequest(dataDir)
	l.Logger.Info("status password changed by hookbox passwd", "user", l.user)
}

// StatusLogin returns the check of the status page's login, generating a
// password when none exists (NewLogin, then Ensure).
func StatusLogin(ctx context.Context, cfg StatusConfig, store MetaStore, logger *slog.Logger) (func(user, password string) bool, error) {
	l, err := NewLogin(ctx, cfg, store, logger)
	if err != nil {
		return nil, err
	}
	if err := l.Ensure(ctx); err != nil {
		return nil, err
	}
	return l.Check, nil
}

// equalConst compares in constant time, lengths included (by hashing first).
func equalConst(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// GeneratePassword returns 20 characters from an unambiguous alphabet.
func GeneratePassword() string { return generatePassword() }

func generatePassword() string {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 20)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
