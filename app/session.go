// The status page's sessions: what the stores keep of one (app/access
// makes and checks them; app/web hands the token to the browser).

package app

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// SessionTTL is how long a login to the status page lasts: the cookie's
// lifetime and the stored session's. Logging in again starts a new one.
const SessionTTL = 12 * time.Hour

// Session is one login to the status page, as the stores keep it: only
// the SHA-256 of its token (the browser's cookie holds the token), who
// logged in, and until when. It survives restarts and reloads; it ends at
// logout, at its expiry, and when its user's password or role changes or
// the user is removed (the stores delete the user's sessions in the
// transaction of that change, and the identity's Stamp no longer holds).
type Session struct {
	// Hash is the SHA-256 of the token (SessionHash).
	Hash [sha256.Size]byte
	// ID is who logged in, with the Stamp of their user then.
	ID      Identity
	Created time.Time
	Expires time.Time
}

// Expired reports whether s has ended by time at now.
func (s *Session) Expired(now time.Time) bool { return !now.Before(s.Expires) }

// NewSessionToken returns a new session token: 32 random bytes in hex,
// the cookie's value.
func NewSessionToken() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SessionHash is what the stores keep of a session's token and look it up
// by. A token is 256 random bits, so a plain SHA-256 is enough: nobody can
// guess a token from its hash, nor find another token with the same one.
func SessionHash(token string) [sha256.Size]byte { return sha256.Sum256([]byte(token)) }
