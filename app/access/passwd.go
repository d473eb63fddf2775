package access

import (
	"errors"
	"fmt"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// Bounds of a status password; bcrypt reads at most 72 bytes.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 72
)

// Bounds of the cost of a hash taken from a request: a login costs the
// hash's cost, so a request cannot make every login slow.
const (
	minRequestCost = bcrypt.DefaultCost
	maxRequestCost = 14
)

// ErrPasswordInConfig means the status password comes from the config, so
// hookbox passwd has nothing to change.
var ErrPasswordInConfig = errors.New("the status password is set in the config ([status] password or password_env): change it there; hookbox passwd does nothing")

// HashPassword checks a new status password and returns its bcrypt hash.
func HashPassword(pw string) ([]byte, error) {
	switch {
	case len(pw) < MinPasswordLen:
		return nil, fmt.Errorf("the password must have at least %d characters", MinPasswordLen)
	case len(pw) > MaxPasswordLen:
		return nil, fmt.Errorf("the password must have at most %d bytes (bcrypt reads no more)", MaxPasswordLen)
	case !utf8.ValidString(pw):
		return nil, errors.New("the password is not valid UTF-8")
	}
	for _, r := range pw {
		if r < 0x20 || r == 0x7f {
			return nil, errors.New("the password must not contain control characters")
		}
	}
	return bcrypt.GenerateFromPassword([]byte(pw), bcrypt.DefaultCost)
}

// ValidPasswordHash reports whether h is a bcrypt hash a login may use.
func ValidPasswordHash(h []byte) error {
	cost, err := bcrypt.Cost(h)
	if err != nil {
		return fmt.Errorf("not a bcrypt hash: %w", err)
	}
	if cost < minRequestCost || cost > maxRequestCost {
		return fmt.Errorf("bcrypt cost %d is outside %d-%d", cost, minRequestCost, maxRequestCost)
	}
	return nil
}
