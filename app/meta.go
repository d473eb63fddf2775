package app

import "context"

// MetaStore keeps small settings by name, such as the status password's
// hash of an older hookbox (which EnsureFirstUser turns into the admin
// user).
type MetaStore interface {
	// Meta returns the value kept under name, nil when there is none.
	Meta(ctx context.Context, name string) ([]byte, error)
	// SetMeta keeps value under name, durably.
	SetMeta(ctx context.Context, name string, value []byte) error
}

// PasswordHashKey is the meta name under which the status password's
// bcrypt hash is kept (the password itself is never stored).
const PasswordHashKey = "status_password_bcrypt"
