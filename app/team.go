// Team access: users with roles, tokens for scripts, and what the stores
// keep of them. The service in app/access answers who is calling; the
// table of roles (roles.go) says what each may do; the audit log
// (audit.go) records what they changed.

package app

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"time"
)

// Role is what a user or token may do. Each role may do what the ones
// below it may.
type Role int

// The roles, weakest first.
const (
	// RoleNone is no role: nothing is allowed.
	RoleNone Role = iota
	// RoleViewer sees every page, the read API and /metrics.
	RoleViewer
	// RoleOperator may also replay, retry, pause and resume.
	RoleOperator
	// RoleAdmin may also manage users and tokens, read the audit log and
	// download backups.
	RoleAdmin
)

var roleNames = [...]string{RoleNone: "", RoleViewer: "viewer", RoleOperator: "operator", RoleAdmin: "admin"}

// String returns the role's name as written in commands and JSON.
func (r Role) String() string {
	if r < 0 || int(r) >= len(roleNames) {
		return ""
	}
	return roleNames[r]
}

// Roles returns the roles a user or token may have, weakest first.
func Roles() []Role { return []Role{RoleViewer, RoleOperator, RoleAdmin} }

// Allows reports whether r may do what needs need.
func (r Role) Allows(need Role) bool { return r != RoleNone && r >= need }

// ParseRole reads a role's name.
func ParseRole(s string) (Role, error) {
	for r, n := range roleNames {
		if n != "" && n == s {
			return Role(r), nil
		}
	}
	return RoleNone, Errorf(EINVALID, "unknown role %q: want viewer, operator or admin", s)
}

// User is one person who may log in to the status page and the API.
type User struct {
	Name string
	Role Role
	// Hash is the bcrypt hash of the password; the password is never kept.
	Hash    []byte
	Created time.Time
	// Changed is when the role or the password last changed.
	Changed time.Time
	// Stamp is set by the store at each creation and change, unique over
	// the store's life: a session or cached credential taken under another
	// stamp has ended.
	Stamp uint64
}

// Token is a credential for scripts: a Bearer secret for /api/v1 and
// /metrics, never for the pages. Only its SHA-256 is kept.
type Token struct {
	Name string
	Role Role
	// Hash is the SHA-256 of the secret (TokenHash).
	Hash    [sha256.Size]byte
	Created time.Time
	// CreatedBy is who created it (an audit actor).
	CreatedBy string
	// Expires is when it stops working (zero: never).
	Expires time.Time
	// LastUsed is when it was last accepted (zero: never), to a minute.
	LastUsed time.Time
	// Stamp is set by the store at creation, unique over the store's life.
	Stamp uint64
}

// Expired reports whether t no longer works at now.
func (t *Token) Expired(now time.Time) bool { return !t.Expires.IsZero() && !now.Before(t.Expires) }

// AccessData is every user and token, read at one version.
type AccessData struct {
	Users  []User
	Tokens []Token
	// Version changes with each change of a user or token (not with a
	// token's last use).
	Version uint64
}

// ValidAccessName checks a user's or token's name: 1 to 64 letters,
// digits, '.', '_', '@' or '-', starting with a letter or digit.
func ValidAccessName(kind, name string) error {
	if name == "" {
		return Errorf(EINVALID, "the %s needs a name", kind)
	}
	if len(name) > MaxAccessName {
		return Errorf(EINVALID, "the %s name %q is longer than %d characters", kind, CleanName(name), MaxAccessName)
	}
	for i, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if i > 0 && strings.ContainsRune("._@-", r) {
			ok = true
		}
		if !ok {
			return Errorf(EINVALID, "the %s name %q may hold only letters, digits, '.', '_', '@' and '-', and starts with a letter or digit", kind, CleanName(name))
		}
	}
	return nil
}

// TokenPrefix starts every token's secret, so that a leaked one is easy
// to find in code and logs.
const TokenPrefix = "hbx_"

var tokenEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewTokenSecret returns a new token secret: TokenPrefix and 32 random
// bytes in lower-case base32.
func NewTokenSecret() string {
	var b [32]byte
	rand.Read(b[:])
	return TokenPrefix + strings.ToLower(tokenEncoding.EncodeToString(b[:]))
}

// TokenHash is what is kept of a token's secret.
func TokenHash(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// LooksLikeToken reports whether s has the shape of a token secret.
func LooksLikeToken(s string) bool {
	return strings.HasPrefix(s, TokenPrefix) && len(s) == len(TokenPrefix)+52
}

// ParseExpiry reads a token's lifetime: a Go duration or a number of days
// ("90d"); "" or "0" is never.
func ParseExpiry(s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err == nil && days > 0 && days <= 36500 && fmt.Sprint(days) == n {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d, nil
	}
	return 0, Errorf(EINVALID, "expiry %q: want a number of days (90d) or a duration (12h)", s)
}
