package app

// PasswordHashKey is the meta name (MetaStore) under which the status
// password's bcrypt hash of an older hookbox is kept (the password itself
// is never stored); EnsureFirstUser turns it into the admin user.
const PasswordHashKey = "status_password_bcrypt"
