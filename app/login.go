package app

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"

	"golang.org/x/crypto/bcrypt"
)

// MetaStore keeps small settings, such as the generated password's hash.
type MetaStore interface {
	Meta(name string) ([]byte, error)
	SetMeta(name string, value []byte) error
}

const passwordHashKey = "status_password_bcrypt"

// StatusLogin returns the check of the status page's login. With a
// password in the config it compares against that; without one it uses
// the bcrypt hash kept in store, generating a password at the first start
// and logging it once (the only time a secret is logged, on purpose: it is
// how the merchant learns it).
func StatusLogin(cfg StatusConfig, store MetaStore, logger *slog.Logger) (func(user, password string) bool, error) {
	userOK := func(u string) bool { return equalConst(u, cfg.User) }
	if cfg.Password != "" {
		return func(u, p string) bool {
			uok, pok := userOK(u), equalConst(p, cfg.Password) // both, so the time does not tell which was wrong
			return uok && pok
		}, nil
	}
	hash, err := store.Meta(passwordHashKey)
	if err != nil {
		return nil, fmt.Errorf("read the status password: %w", err)
	}
	if hash == nil {
		pw := generatePassword()
		hash, err = bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
		if err != nil {
			return nil, fmt.Errorf("hash the status password: %w", err)
		}
		if err := store.SetMeta(passwordHashKey, hash); err != nil {
			return nil, fmt.Errorf("store the status password: %w", err)
		}
		logger.Warn("generated a status page password; it is shown only this once (set [status] password_env to choose one)",
			"user", cfg.User, "password", pw)
	}
	return func(u, p string) bool {
		ok := bcrypt.CompareHashAndPassword(hash, []byte(p)) == nil
		return userOK(u) && ok
	}, nil
}

// equalConst compares in constant time, lengths included (by hashing first).
func equalConst(a, b string) bool {
	ha, hb := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// generatePassword returns 20 characters from an unambiguous alphabet.
func generatePassword() string {
	const alphabet = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 20)
	rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
