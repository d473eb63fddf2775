package listen

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// The listen secret is what `hookbox listen` signs each forwarded request
// with, in the scheme of the event's provider; the local app verifies with
// it as it would with the provider's secret. It is derived on the laptop
// from the credential listen connects with, so it stays the same from run
// to run for the same token (or user and password) and never travels: the
// remote neither keeps nor sends it, and no source of the remote takes it.
//
// Its form, "whsec_" and the std base64 of 32 bytes, is valid for every
// scheme: Stripe, Shopify, GitHub and the others sign with its bytes as
// they are; Standard Webhooks (and Svix) base64-decode what follows
// "whsec_" into a key of 32 bytes, within the 24 to 64 its spec asks for.
const (
	// SecretPrefix begins every listen secret.
	SecretPrefix = "whsec_"
	// secretLabel binds the derivation to its purpose (and version).
	secretLabel = "hookbox listen secret v1"
	// minSecretKey and maxSecretKey bound a secret given with -secret
	// (after SecretPrefix, decoded): the Standard Webhooks spec's bounds.
	minSecretKey, maxSecretKey = 24, 64
)

// TokenSecret returns the listen secret of the API token tok:
// HMAC-SHA256 keyed with the token. Knowing it tells nothing of the token,
// which is random and long: a fast function is enough.
func TokenSecret(tok string) string {
	m := hmac.New(sha256.New, []byte(tok))
	m.Write([]byte(secretLabel))
	return SecretPrefix + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// PasswordSecret returns the listen secret of user with password: Argon2id
// (OWASP's minimum, 19 MiB and 2 passes) of the password, salted with the
// label and the user's name. A password may be guessable, and the secret
// sits in the local app's config: a slow function makes each guess at it
// cost what a guess at a password hash does.
func PasswordSecret(user, password string) string {
	key := argon2.IDKey([]byte(password), []byte(secretLabel+"\x00"+user), 2, 19<<10, 1, 32)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// CheckSecret reports whether s is a listen secret that every scheme takes:
// SecretPrefix and the std base64 (padded or not) of 24 to 64 bytes. The
// error never quotes s.
func CheckSecret(s string) error {
	rest, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return fmt.Errorf("a listen secret begins with %s (then base64): every scheme takes that form", SecretPrefix)
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(rest)
	}
	if err != nil || len(key) < minSecretKey || len(key) > maxSecretKey {
		return fmt.Errorf("a listen secret is %s and the base64 of %d to %d bytes (as Standard Webhooks asks)", SecretPrefix, minSecretKey, maxSecretKey)
	}
	return nil
}
