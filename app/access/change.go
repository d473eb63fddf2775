// The audited changes of users and tokens: each goes to the store, which
// keeps the last admin, and is recorded in the audit log, done or failed.

package access

import (
	"context"
	"time"

	"hookbox/app"
)

// noSuch answers err, a store's answer to a change of the user or token
// name, with the name cleaned (CleanName) when there is no such user or
// token: the name came with the request and goes into the answer and the
// audit log.
func noSuch(kind, name string, err error) error {
	if app.ErrorCode(err) == app.ENOTFOUND {
		return app.Errorf(app.ENOTFOUND, "no %s %q", kind, app.CleanName(name))
	}
	return err
}

// errNoStore answers a change when there is no store of users.
var errNoStore = app.Errorf(app.EFORBIDDEN, "users and tokens are not kept here")

// AddUser creates the user name with role and the password of hash.
func (a *Service) AddUser(ctx context.Context, who app.Who, name string, role app.Role, hash []byte) error {
	err := a.addUser(ctx, name, role, hash)
	a.Record(ctx, who.Entry(app.AuditUserAdd, app.CleanName(name), "role "+role.String(), err))
	return err
}

func (a *Service) addUser(ctx context.Context, name string, role app.Role, hash []byte) error {
	if a.store == nil {
		return errNoStore
	}
	if err := app.ValidAccessName("user", name); err != nil {
		return err
	}
	if role == app.RoleNone {
		return app.Errorf(app.EINVALID, "the user needs a role: viewer, operator or admin")
	}
	if a.PasswordInConfig(name) {
		return app.Errorf(app.ECONFLICT, "%s is the user of [status] password in the config", name)
	}
	if err := ValidPasswordHash(hash); err != nil {
		return app.Errorf(app.EINVALID, "password hash: %v", err)
	}
	now := a.Now()
	if err := a.store.CreateUser(ctx, app.User{Name: name, Role: role, Hash: hash, Created: now, Changed: now}); err != nil {
		return err
	}
	return a.load(ctx)
}

// RemoveUser removes the user name; the last admin stays.
func (a *Service) RemoveUser(ctx context.Context, who app.Who, name string) error {
	err := a.removeUser(ctx, name)
	a.Record(ctx, who.Entry(app.AuditUserRemove, app.CleanName(name), "", err))
	return err
}

func (a *Service) removeUser(ctx context.Context, name string) error {
	if a.store == nil {
		return errNoStore
	}
	if err := a.store.RemoveUser(ctx, name, a.adminGuard()); err != nil {
		return noSuch("user", name, err)
	}
	return a.load(ctx)
}

// SetRole gives the user name role.
func (a *Service) SetRole(ctx context.Context, who app.Who, name string, role app.Role) error {
	detail := "to " + role.String()
	if u := a.snap.Load().users[name]; u != nil {
		detail = u.Role.String() + " to " + role.String()
	}
	err := a.setRole(ctx, name, role)
	a.Record(ctx, who.Entry(app.AuditUserRole, app.CleanName(name), detail, err))
	return err
}

func (a *Service) setRole(ctx context.Context, name string, role app.Role) error {
	if a.store == nil {
		return errNoStore
	}
	if role == app.RoleNone {
		return app.Errorf(app.EINVALID, "want a role: viewer, operator or admin")
	}
	if a.PasswordInConfig(name) {
		return app.Errorf(app.ECONFLICT, "%s is the user of [status] password in the config: always an admin", name)
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
func (a *Service) adminGuard() app.AdminGuard {
	if a.fixed != "" {
		return app.AdminInConfig
	}
	return app.KeepAdmin
}

// SetPassword changes the password of the user name to hash's.
func (a *Service) SetPassword(ctx context.Context, who app.Who, name string, hash []byte) error {
	err := a.setPassword(ctx, name, hash)
	a.Record(ctx, who.Entry(app.AuditUserPassword, app.CleanName(name), "", err))
	return err
}

func (a *Service) setPassword(ctx context.Context, name string, hash []byte) error {
	if a.PasswordInConfig(name) {
		return app.Errorf(app.ECONFLICT, "%s", ErrPasswordInConfig.Error())
	}
	if a.store == nil {
		return errNoStore
	}
	if err := ValidPasswordHash(hash); err != nil {
		return app.Errorf(app.EINVALID, "password hash: %v", err)
	}
	if err := a.store.SetUserPassword(ctx, name, hash, a.Now()); err != nil {
		return noSuch("user", name, err)
	}
	return a.load(ctx)
}

// CreateToken makes the token name with role, expiring after ttl (0:
// never), and returns its secret: shown once, never kept.
func (a *Service) CreateToken(ctx context.Context, who app.Who, name string, role app.Role, ttl time.Duration) (string, error) {
	secret := app.NewTokenSecret()
	err := a.AddToken(ctx, who, name, role, app.TokenHash(secret), ttl)
	if err != nil {
		return "", err
	}
	return secret, nil
}

// AddToken stores the token name of a secret hashed elsewhere (hookbox
// token create hands the running server only the hash).
func (a *Service) AddToken(ctx context.Context, who app.Who, name string, role app.Role, hash [32]byte, ttl time.Duration) error {
	detail := "role " + role.String()
	now := a.Now()
	t := app.Token{Name: name, Role: role, Hash: hash, Created: now, CreatedBy: who.Actor}
	if ttl > 0 {
		t.Expires = now.Add(ttl)
		detail += ", expires " + t.Expires.UTC().Format(time.RFC3339)
	}
	err := a.addToken(ctx, t)
	a.Record(ctx, who.Entry(app.AuditTokenCreate, app.CleanName(name), detail, err))
	return err
}

func (a *Service) addToken(ctx context.Context, t app.Token) error {
	if a.store == nil {
		return errNoStore
	}
	if err := app.ValidAccessName("token", t.Name); err != nil {
		return err
	}
	if t.Role == app.RoleNone {
		return app.Errorf(app.EINVALID, "the token needs a role: viewer, operator or admin")
	}
	if err := a.store.CreateToken(ctx, t); err != nil {
		return err
	}
	return a.load(ctx)
}

// RevokeToken removes the token name: it stops working at once here and
// within Poll on every node.
func (a *Service) RevokeToken(ctx context.Context, who app.Who, name string) error {
	err := a.revokeToken(ctx, name)
	a.Record(ctx, who.Entry(app.AuditTokenRevoke, app.CleanName(name), "", err))
	return err
}

func (a *Service) revokeToken(ctx context.Context, name string) error {
	if a.store == nil {
		return errNoStore
	}
	if err := a.store.RevokeToken(ctx, name); err != nil {
		return noSuch("token", name, err)
	}
	return a.load(ctx)
}
