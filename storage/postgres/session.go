package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"hookbox/app"
)

var _ app.SessionStore = (*DB)(nil)

// CreateSession stores s; ECONFLICT when its hash is taken.
func (d *DB) CreateSession(ctx context.Context, s app.Session) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	_, err := d.pool.Exec(ctx, `INSERT INTO hookbox_sessions (hash, username, role, fixed, stamp, created, expires)
VALUES ($1, $2, $3, $4, $5, $6, $7)`, s.Hash[:], s.ID.Name, s.ID.Role.String(), s.ID.Fixed, int64(s.ID.Stamp), micro(s.Created), micro(s.Expires))
	if isUnique(err) {
		return app.Errorf(app.ECONFLICT, "a session has the same token")
	}
	return d.committed(err)
}

// FindSession returns the session of hash, expired or not: one read of
// the primary key.
func (d *DB) FindSession(ctx context.Context, hash [32]byte) (app.Session, bool, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	s := app.Session{Hash: hash}
	var role string
	var stamp int64
	err := d.pool.QueryRow(ctx, "SELECT username, role, fixed, stamp, created, expires FROM hookbox_sessions WHERE hash = $1", hash[:]).
		Scan(&s.ID.Name, &role, &s.ID.Fixed, &stamp, &s.Created, &s.Expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return app.Session{}, false, nil
	}
	if err != nil {
		return app.Session{}, false, err
	}
	if role != "" {
		if s.ID.Role, err = app.ParseRole(role); err != nil {
			return app.Session{}, false, err
		}
	}
	s.ID.Stamp, s.Created, s.Expires = uint64(stamp), s.Created.UTC(), s.Expires.UTC()
	return s, true, nil
}

// DeleteSession deletes the session of hash; none is no error.
func (d *DB) DeleteSession(ctx context.Context, hash [32]byte) error {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	_, err := d.pool.Exec(ctx, "DELETE FROM hookbox_sessions WHERE hash = $1", hash[:])
	return d.committed(err)
}

// DeleteExpiredSessions deletes at most limit sessions expired at or
// before now, oldest first (hookbox_sessions_expires).
func (d *DB) DeleteExpiredSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	ctx, cancel := opCtx(ctx)
	defer cancel()
	tag, err := d.pool.Exec(ctx, `DELETE FROM hookbox_sessions WHERE hash IN
(SELECT hash FROM hookbox_sessions WHERE expires <= $1 ORDER BY expires LIMIT $2)`, micro(now), limit)
	if err = d.committed(err); err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// endUserSessions deletes the sessions of the user name in tx: their role
// or password changed, or they were removed.
func endUserSessions(ctx context.Context, tx pgx.Tx, name string) error {
	_, err := tx.Exec(ctx, "DELETE FROM hookbox_sessions WHERE username = $1 AND NOT fixed", name)
	return err
}
