package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"hookbox/app"
)

var _ app.AccessStore = (*DB)(nil)

// bumpAccess moves the access version in tx and returns it; the row's
// lock orders every change of users and tokens across nodes.
func bumpAccess(ctx context.Context, tx pgx.Tx) (uint64, error) {
	var v int64
	err := tx.QueryRow(ctx, "UPDATE hookbox_access_version SET version = version + 1 WHERE id = 1 RETURNING version").Scan(&v)
	return uint64(v), err
}

// AccessVersion returns the version of the users and tokens.
func (d *DB) AccessVersion(ctx context.Context) (uint64, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var v int64
	err := d.pool.QueryRow(ctx, "SELECT version FROM hookbox_access_version WHERE id = 1").Scan(&v)
	return uint64(v), err
}

// LoadAccess returns every user and token with the version, read in one
// snapshot.
func (d *DB) LoadAccess(ctx context.Context) (app.AccessData, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var a app.AccessData
	err := pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		a = app.AccessData{}
		var v int64
		if err := tx.QueryRow(ctx, "SELECT version FROM hookbox_access_version WHERE id = 1").Scan(&v); err != nil {
			return err
		}
		a.Version = uint64(v)
		rows, err := tx.Query(ctx, "SELECT name, role, hash, created, changed, stamp FROM hookbox_users ORDER BY name")
		if err != nil {
			return err
		}
		for rows.Next() {
			var u app.User
			var role string
			var changed *time.Time
			var stamp int64
			if err := rows.Scan(&u.Name, &role, &u.Hash, &u.Created, &changed, &stamp); err != nil {
				return err
			}
			if u.Role, err = app.ParseRole(role); err != nil {
				return fmt.Errorf("user %q: %w", u.Name, err)
			}
			u.Created, u.Changed, u.Stamp = u.Created.UTC(), deref(changed), uint64(stamp)
			a.Users = append(a.Users, u)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, "SELECT name, role, hash, created, created_by, expires, last_used, stamp FROM hookbox_tokens ORDER BY name")
		if err != nil {
			return err
		}
		for rows.Next() {
			var t app.Token
			var role string
			var hash []byte
			var expires, used *time.Time
			var stamp int64
			if err := rows.Scan(&t.Name, &role, &hash, &t.Created, &t.CreatedBy, &expires, &used, &stamp); err != nil {
				return err
			}
			if t.Role, err = app.ParseRole(role); err != nil {
				return fmt.Errorf("token %q: %w", t.Name, err)
			}
			copy(t.Hash[:], hash)
			t.Created, t.Expires, t.LastUsed, t.Stamp = t.Created.UTC(), deref(expires), deref(used), uint64(stamp)
			a.Tokens = append(a.Tokens, t)
		}
		return rows.Err()
	})
	return a, err
}

// isUnique reports whether err is a unique violation.
func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// accessChange runs fn in a transaction with a new version as its stamp.
func (d *DB) accessChange(ctx context.Context, fn func(tx pgx.Tx, stamp uint64) error) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		v, err := bumpAccess(ctx, tx)
		if err != nil {
			return err
		}
		return fn(tx, v)
	})
	return d.committed(err)
}

// CreateUser adds u with a new Stamp; ECONFLICT when the name is taken.
func (d *DB) CreateUser(ctx context.Context, u app.User) error {
	return d.accessChange(ctx, func(tx pgx.Tx, stamp uint64) error {
		return insertUser(ctx, tx, u, stamp)
	})
}

func insertUser(ctx context.Context, tx pgx.Tx, u app.User, stamp uint64) error {
	tag, err := tx.Exec(ctx, `INSERT INTO hookbox_users (name, role, hash, created, changed, stamp) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (name) DO NOTHING`, u.Name, u.Role.String(), nonNil(u.Hash), micro(u.Created), orNull(micro(u.Changed)), int64(stamp))
	if err == nil && tag.RowsAffected() == 0 {
		return app.Errorf(app.ECONFLICT, "user %q exists", u.Name)
	}
	return err
}

// changeUser sets set on the user name under a new stamp and ends their
// sessions; check, when not nil, may refuse the change first, in the same
// transaction.
func (d *DB) changeUser(ctx context.Context, name string, check func(pgx.Tx) error, set string, args ...any) error {
	return d.accessChange(ctx, func(tx pgx.Tx, stamp uint64) error {
		if check != nil {
			if err := check(tx); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, "UPDATE hookbox_users SET "+set+", stamp = $2 WHERE name = $1", append([]any{name, int64(stamp)}, args...)...)
		if err == nil && tag.RowsAffected() == 0 {
			return app.Errorf(app.ENOTFOUND, "no user %q", name)
		}
		if err != nil {
			return err
		}
		return endUserSessions(ctx, tx, name)
	})
}

// guardAdmin returns guard's check of giving name role, made in the
// transaction of the change on the admins it reads and locks (FOR UPDATE).
// The version row that accessChange updated first already makes the
// changes of users wait for each other across nodes, and under READ
// COMMITTED a statement run after that wait sees what the change before
// committed; the admin rows are locked too, so that the rule does not
// rest on that order alone.
func guardAdmin(ctx context.Context, guard app.AdminGuard, name string, role app.Role) func(pgx.Tx) error {
	return func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT name FROM hookbox_users WHERE role = $1 ORDER BY name FOR UPDATE", app.RoleAdmin.String())
		if err != nil {
			return err
		}
		admins, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		return guard.Check(admins, name, role)
	}
}

// SetUserRole changes name's role; ENOTFOUND when there is no such user,
// ECONFLICT when guard refuses to lose the last admin.
func (d *DB) SetUserRole(ctx context.Context, name string, role app.Role, at time.Time, guard app.AdminGuard) error {
	return d.changeUser(ctx, name, guardAdmin(ctx, guard, name, role), "role = $3, changed = $4", role.String(), micro(at))
}

// SetUserPassword changes name's password hash; ENOTFOUND when there is
// no such user.
func (d *DB) SetUserPassword(ctx context.Context, name string, hash []byte, at time.Time) error {
	return d.changeUser(ctx, name, nil, "hash = $3, changed = $4", nonNil(hash), micro(at))
}

// RemoveUser removes name and their sessions; ENOTFOUND when there is no such user,
// ECONFLICT when guard refuses to lose the last admin.
func (d *DB) RemoveUser(ctx context.Context, name string, guard app.AdminGuard) error {
	check := guardAdmin(ctx, guard, name, app.RoleNone)
	return d.removeAccess(ctx, "DELETE FROM hookbox_users WHERE name = $1", "user", name, func(tx pgx.Tx) error {
		if err := check(tx); err != nil {
			return err
		}
		return endUserSessions(ctx, tx, name) // undone with the rest when no such user
	})
}

// RevokeToken removes the token name; ENOTFOUND when there is none.
func (d *DB) RevokeToken(ctx context.Context, name string) error {
	return d.removeAccess(ctx, "DELETE FROM hookbox_tokens WHERE name = $1", "token", name, nil)
}

// removeAccess runs sql to remove name; check, when not nil, may refuse
// first, in the same transaction.
func (d *DB) removeAccess(ctx context.Context, sql, noun, name string, check func(pgx.Tx) error) error {
	return d.accessChange(ctx, func(tx pgx.Tx, _ uint64) error {
		if check != nil {
			if err := check(tx); err != nil {
				return err
			}
		}
		tag, err := tx.Exec(ctx, sql, name)
		if err == nil && tag.RowsAffected() == 0 {
			return app.Errorf(app.ENOTFOUND, "no %s %q", noun, name)
		}
		return err
	})
}

// CreateToken adds t with a new Stamp; ECONFLICT when the name or the
// secret's hash is taken.
func (d *DB) CreateToken(ctx context.Context, t app.Token) error {
	err := d.accessChange(ctx, func(tx pgx.Tx, stamp uint64) error {
		tag, err := tx.Exec(ctx, `INSERT INTO hookbox_tokens (name, role, hash, created, created_by, expires, last_used, stamp)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (name) DO NOTHING`, t.Name, t.Role.String(), t.Hash[:], micro(t.Created), t.CreatedBy,
			orNull(micro(t.Expires)), orNull(micro(t.LastUsed)), int64(stamp))
		if err == nil && tag.RowsAffected() == 0 {
			return app.Errorf(app.ECONFLICT, "token %q exists", t.Name)
		}
		return err
	})
	if isUnique(err) {
		return app.Errorf(app.ECONFLICT, "a token has the same secret")
	}
	return err
}

// TouchToken records that name was used at at when at is later than the
// time kept; it leaves the version alone.
func (d *DB) TouchToken(ctx context.Context, name string, at time.Time) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	_, err := d.pool.Exec(ctx, "UPDATE hookbox_tokens SET last_used = $2 WHERE name = $1 AND (last_used IS NULL OR last_used < $2)", name, micro(at))
	return d.committed(err)
}

// EnsureFirstUser makes sure a user exists (app.AccessStore), once for the
// database: under a transaction's advisory lock that every node takes, so
// a node that waits for it sees the user the first one made and does not
// call first.
func (d *DB) EnsureFirstUser(ctx context.Context, name string, at time.Time, first func() ([]byte, error)) (bool, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	var created bool
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		created = false
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))", lockAccess); err != nil {
			return err
		}
		var any bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM hookbox_users)").Scan(&any); err != nil || any {
			return err
		}
		var hash []byte
		err := tx.QueryRow(ctx, "SELECT value FROM hookbox_meta WHERE name = $1", app.PasswordHashKey).Scan(&hash)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		fresh := len(hash) == 0
		if fresh {
			if hash, err = first(); err != nil {
				return err
			}
		}
		v, err := bumpAccess(ctx, tx)
		if err != nil {
			return err
		}
		created = fresh
		return insertUser(ctx, tx, app.User{Name: name, Role: app.RoleAdmin, Hash: hash, Created: at, Changed: at}, v)
	})
	if err = d.committed(err); err != nil {
		return false, err
	}
	return created, nil
}
