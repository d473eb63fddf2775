package bboltstore

import (
	"context"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// bucketSessions holds the status page's sessions: the SHA-256 of a
// session's token (32 bytes) → an accessVersion byte then JSON
// (sessionV1). They are few (the logins of the last SessionTTL), so
// ending a user's sessions and the sweep scan the bucket.
var bucketSessions = []byte("sessions")

// sessionV1 is the stored layout of an app.Session.
type sessionV1 struct {
	User    string    `json:"user"`
	Role    string    `json:"role"`
	Fixed   bool      `json:"fixed,omitempty"`
	Stamp   uint64    `json:"stamp"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

var _ app.SessionStore = (*DB)(nil)

func decodeSession(hash []byte, v []byte) (app.Session, error) {
	var r sessionV1
	if err := decodeRecord("session", v, &r); err != nil {
		return app.Session{}, err
	}
	s := app.Session{ID: app.Identity{Name: r.User, Fixed: r.Fixed, Stamp: r.Stamp}, Created: r.Created, Expires: r.Expires}
	copy(s.Hash[:], hash)
	if r.Role != "" {
		role, err := app.ParseRole(r.Role)
		if err != nil {
			return app.Session{}, err
		}
		s.ID.Role = role
	}
	return s, nil
}

// CreateSession stores s; ECONFLICT when its hash is taken.
func (d *DB) CreateSession(ctx context.Context, s app.Session) error {
	v, err := encodeRecord(sessionV1{User: s.ID.Name, Role: s.ID.Role.String(), Fixed: s.ID.Fixed, Stamp: s.ID.Stamp,
		Created: s.Created.UTC(), Expires: s.Expires.UTC()})
	if err != nil {
		return err
	}
	return d.update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketSessions)
		if err != nil {
			return err
		}
		if b.Get(s.Hash[:]) != nil {
			return app.Errorf(app.ECONFLICT, "a session has the same token")
		}
		return b.Put(s.Hash[:], v)
	})
}

// FindSession returns the session of hash, expired or not.
func (d *DB) FindSession(ctx context.Context, hash [32]byte) (app.Session, bool, error) {
	var s app.Session
	var ok bool
	err := d.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSessions)
		if b == nil {
			return nil
		}
		v := b.Get(hash[:])
		if v == nil {
			return nil
		}
		var err error
		s, err = decodeSession(hash[:], v) // decoded inside: v dies with tx
		ok = err == nil
		return err
	})
	return s, ok, err
}

// DeleteSession deletes the session of hash; none is no error.
func (d *DB) DeleteSession(ctx context.Context, hash [32]byte) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketSessions); b != nil {
			return b.Delete(hash[:])
		}
		return nil
	})
}

// DeleteExpiredSessions deletes at most limit sessions expired at or
// before now.
func (d *DB) DeleteExpiredSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	var n int
	err := d.update(ctx, func(tx *bolt.Tx) error {
		n = 0
		keys, err := sessionKeys(tx, limit, func(s app.Session) bool { return s.Expired(now) })
		if err != nil {
			return err
		}
		n = len(keys)
		return deleteKeys(tx.Bucket(bucketSessions), keys)
	})
	return n, err
}

// endUserSessions deletes the sessions of the user name in tx: their
// role or password changed, or they were removed.
func endUserSessions(tx *bolt.Tx, name string) error {
	keys, err := sessionKeys(tx, -1, func(s app.Session) bool { return !s.ID.Fixed && s.ID.Name == name })
	if err != nil {
		return err
	}
	return deleteKeys(tx.Bucket(bucketSessions), keys)
}

// sessionKeys returns the keys of at most limit (-1: all) sessions that
// match; a record that cannot be read matches, so that it goes too.
func sessionKeys(tx *bolt.Tx, limit int, match func(app.Session) bool) ([][]byte, error) {
	b := tx.Bucket(bucketSessions)
	if b == nil {
		return nil, nil
	}
	var keys [][]byte
	c := b.Cursor()
	for k, v := c.First(); k != nil && (limit < 0 || len(keys) < limit); k, v = c.Next() {
		s, err := decodeSession(k, v)
		if err != nil || match(s) {
			keys = append(keys, append([]byte(nil), k...))
		}
	}
	return keys, nil
}
