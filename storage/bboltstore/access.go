package bboltstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"hookbox/app"
)

// The buckets of team access: users and tokens by name, each value an
// accessVersion byte then JSON; bucketAccess holds the version counter
// (key "version", 8 bytes big-endian), bumped in the transaction of every
// change and used as the Stamp of what the change writes.
var (
	bucketUsers  = []byte("users")
	bucketTokens = []byte("tokens")
	bucketAccess = []byte("access")
	keyVersion   = []byte("version")
)

const accessVersion = 1

// userV1 is the stored layout of an app.User.
type userV1 struct {
	Role    string    `json:"role"`
	Hash    []byte    `json:"hash"`
	Created time.Time `json:"created"`
	Changed time.Time `json:"changed,omitzero"`
	Stamp   uint64    `json:"stamp"`
}

// tokenV1 is the stored layout of an app.Token.
type tokenV1 struct {
	Role      string    `json:"role"`
	Hash      []byte    `json:"hash"`
	Created   time.Time `json:"created"`
	CreatedBy string    `json:"created_by,omitempty"`
	Expires   time.Time `json:"expires,omitzero"`
	LastUsed  time.Time `json:"last_used,omitzero"`
	Stamp     uint64    `json:"stamp"`
}

var _ app.AccessStore = (*DB)(nil)

func encodeRecord(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append([]byte{accessVersion}, b...), nil
}

func decodeRecord(name string, b []byte, v any) error {
	if len(b) == 0 || b[0] != accessVersion {
		return fmt.Errorf("access record %q: unknown encoding", name)
	}
	if err := json.Unmarshal(b[1:], v); err != nil {
		return fmt.Errorf("access record %q: %w", name, err)
	}
	return nil
}

// bumpAccess adds one to the access version in tx and returns it.
func bumpAccess(tx *bolt.Tx) (uint64, error) {
	b, err := tx.CreateBucketIfNotExists(bucketAccess)
	if err != nil {
		return 0, err
	}
	v := readVersion(b) + 1
	return v, b.Put(keyVersion, binary.BigEndian.AppendUint64(nil, v))
}

func readVersion(b *bolt.Bucket) uint64 {
	if b == nil {
		return 0
	}
	if v := b.Get(keyVersion); len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// AccessVersion returns the version of the users and tokens.
func (d *DB) AccessVersion(ctx context.Context) (uint64, error) {
	var v uint64
	err := d.view(ctx, func(tx *bolt.Tx) error {
		v = readVersion(tx.Bucket(bucketAccess))
		return nil
	})
	return v, err
}

// LoadAccess returns every user and token, by name, with the version.
func (d *DB) LoadAccess(ctx context.Context) (app.AccessData, error) {
	var a app.AccessData
	err := d.view(ctx, func(tx *bolt.Tx) error {
		a = app.AccessData{Version: readVersion(tx.Bucket(bucketAccess))}
		var err error
		if a.Users, err = readUsers(tx); err != nil {
			return err
		}
		if b := tx.Bucket(bucketTokens); b != nil {
			return b.ForEach(func(k, v []byte) error {
				t, err := decodeToken(string(k), v)
				if err == nil {
					a.Tokens = append(a.Tokens, t)
				}
				return err
			})
		}
		return nil
	})
	return a, err
}

func readUsers(tx *bolt.Tx) ([]app.User, error) {
	var us []app.User
	b := tx.Bucket(bucketUsers)
	if b == nil {
		return nil, nil
	}
	err := b.ForEach(func(k, v []byte) error {
		u, err := decodeUser(string(k), v)
		if err == nil {
			us = append(us, u)
		}
		return err
	})
	return us, err
}

func decodeUser(name string, v []byte) (app.User, error) {
	var r userV1
	if err := decodeRecord(name, v, &r); err != nil {
		return app.User{}, err
	}
	role, err := app.ParseRole(r.Role)
	if err != nil {
		return app.User{}, fmt.Errorf("user %q: %w", name, err)
	}
	return app.User{Name: name, Role: role, Hash: r.Hash, Created: r.Created, Changed: r.Changed, Stamp: r.Stamp}, nil
}

func decodeToken(name string, v []byte) (app.Token, error) {
	var r tokenV1
	if err := decodeRecord(name, v, &r); err != nil {
		return app.Token{}, err
	}
	role, err := app.ParseRole(r.Role)
	if err != nil {
		return app.Token{}, fmt.Errorf("token %q: %w", name, err)
	}
	t := app.Token{Name: name, Role: role, Created: r.Created, CreatedBy: r.CreatedBy, Expires: r.Expires, LastUsed: r.LastUsed, Stamp: r.Stamp}
	copy(t.Hash[:], r.Hash)
	return t, nil
}

func putUser(tx *bolt.Tx, u app.User) error {
	b, err := tx.CreateBucketIfNotExists(bucketUsers)
	if err != nil {
		return err
	}
	v, err := encodeRecord(userV1{Role: u.Role.String(), Hash: u.Hash, Created: u.Created.UTC(), Changed: u.Changed.UTC(), Stamp: u.Stamp})
	if err != nil {
		return err
	}
	return b.Put([]byte(u.Name), v)
}

func putToken(tx *bolt.Tx, t app.Token) error {
	b, err := tx.CreateBucketIfNotExists(bucketTokens)
	if err != nil {
		return err
	}
	v, err := encodeRecord(tokenV1{Role: t.Role.String(), Hash: t.Hash[:], Created: t.Created.UTC(), CreatedBy: t.CreatedBy,
		Expires: t.Expires.UTC(), LastUsed: t.LastUsed.UTC(), Stamp: t.Stamp})
	if err != nil {
		return err
	}
	return b.Put([]byte(t.Name), v)
}

func getRecord(tx *bolt.Tx, bucket []byte, name string) []byte {
	if b := tx.Bucket(bucket); b != nil {
		return b.Get([]byte(name))
	}
	return nil
}

// CreateUser adds u with a new Stamp; ECONFLICT when the name is taken.
func (d *DB) CreateUser(ctx context.Context, u app.User) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		if getRecord(tx, bucketUsers, u.Name) != nil {
			return app.Errorf(app.ECONFLICT, "user %q exists", u.Name)
		}
		v, err := bumpAccess(tx)
		if err != nil {
			return err
		}
		u.Stamp = v
		return putUser(tx, u)
	})
}

// changeUser applies f to the stored user name under a new Stamp, ending
// their sessions; check, when not nil, may refuse the change first.
func (d *DB) changeUser(ctx context.Context, name string, check func(*bolt.Tx) error, f func(*app.User)) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		raw := getRecord(tx, bucketUsers, name)
		if raw == nil {
			return app.Errorf(app.ENOTFOUND, "no user %q", name)
		}
		u, err := decodeUser(name, raw)
		if err != nil {
			return err
		}
		if check != nil {
			if err := check(tx); err != nil {
				return err
			}
		}
		f(&u)
		if u.Stamp, err = bumpAccess(tx); err != nil {
			return err
		}
		if err := endUserSessions(tx, name); err != nil {
			return err
		}
		return putUser(tx, u)
	})
}

// guardAdmin returns guard's check of giving name role, made on the
// admins of the write transaction it is given: bbolt has one writer at a
// time, and the committer runs the writes of a group one after the other
// in one transaction, so each sees what the ones before it changed.
func guardAdmin(guard app.AdminGuard, name string, role app.Role) func(*bolt.Tx) error {
	return func(tx *bolt.Tx) error {
		users, err := readUsers(tx)
		if err != nil {
			return err
		}
		var admins []string
		for _, u := range users {
			if u.Role == app.RoleAdmin {
				admins = append(admins, u.Name)
			}
		}
		return guard.Check(admins, name, role)
	}
}

// SetUserRole changes name's role; ENOTFOUND when there is no such user,
// ECONFLICT when guard refuses to lose the last admin.
func (d *DB) SetUserRole(ctx context.Context, name string, role app.Role, at time.Time, guard app.AdminGuard) error {
	return d.changeUser(ctx, name, guardAdmin(guard, name, role), func(u *app.User) { u.Role, u.Changed = role, at })
}

// SetUserPassword changes name's password hash; ENOTFOUND when there is
// no such user.
func (d *DB) SetUserPassword(ctx context.Context, name string, hash []byte, at time.Time) error {
	hash = bytes.Clone(hash)
	return d.changeUser(ctx, name, nil, func(u *app.User) { u.Hash, u.Changed = hash, at })
}

// RemoveUser removes name; ENOTFOUND when there is no such user,
// ECONFLICT when guard refuses to lose the last admin.
func (d *DB) RemoveUser(ctx context.Context, name string, guard app.AdminGuard) error {
	return d.removeAccess(ctx, bucketUsers, "user", name, guardAdmin(guard, name, app.RoleNone))
}

// RevokeToken removes the token name; ENOTFOUND when there is none.
func (d *DB) RevokeToken(ctx context.Context, name string) error {
	return d.removeAccess(ctx, bucketTokens, "token", name, nil)
}

// removeAccess removes name from bucket (a user's sessions with them);
// check, when not nil, may refuse first.
func (d *DB) removeAccess(ctx context.Context, bucket []byte, noun, name string, check func(*bolt.Tx) error) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		if getRecord(tx, bucket, name) == nil {
			return app.Errorf(app.ENOTFOUND, "no %s %q", noun, name)
		}
		if check != nil {
			if err := check(tx); err != nil {
				return err
			}
		}
		if _, err := bumpAccess(tx); err != nil {
			return err
		}
		if bytes.Equal(bucket, bucketUsers) {
			if err := endUserSessions(tx, name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucket).Delete([]byte(name))
	})
}

// CreateToken adds t with a new Stamp; ECONFLICT when the name is taken.
// A secret's hash is unique too (the store is searched by it): a second
// token with the same hash is refused the same way.
func (d *DB) CreateToken(ctx context.Context, t app.Token) error {
	return d.update(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketTokens); b != nil {
			if b.Get([]byte(t.Name)) != nil {
				return app.Errorf(app.ECONFLICT, "token %q exists", t.Name)
			}
			// Few tokens: a scan, not an index.
			c := b.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				o, err := decodeToken(string(k), v)
				if err != nil {
					return err
				}
				if o.Hash == t.Hash {
					return app.Errorf(app.ECONFLICT, "token %q has the same secret", string(k))
				}
			}
		}
		v, err := bumpAccess(tx)
		if err != nil {
			return err
		}
		t.Stamp = v
		return putToken(tx, t)
	})
}

// TouchToken records that name was used at at when at is later than the
// time kept; it leaves the version alone.
func (d *DB) TouchToken(ctx context.Context, name string, at time.Time) error {
	// A read first: most touches change nothing and need no commit.
	var later bool
	err := d.view(ctx, func(tx *bolt.Tx) error {
		raw := getRecord(tx, bucketTokens, name)
		if raw == nil {
			return nil
		}
		t, err := decodeToken(name, raw)
		later = err == nil && at.After(t.LastUsed)
		return err
	})
	if err != nil || !later {
		return err
	}
	return d.updateQuiet(ctx, func(tx *bolt.Tx) error {
		raw := getRecord(tx, bucketTokens, name)
		if raw == nil {
			return nil
		}
		t, err := decodeToken(name, raw)
		if err != nil || !at.After(t.LastUsed) {
			return err
		}
		t.LastUsed = at
		return putToken(tx, t)
	})
}

// EnsureFirstUser makes sure a user exists (app.AccessStore). bbolt's
// file lock makes this process the only one, and ensureMu the only caller
// at a time; first runs outside the write because the committer may run a
// write's function more than once, and first shows a password.
func (d *DB) EnsureFirstUser(ctx context.Context, name string, at time.Time, first func() ([]byte, error)) (bool, error) {
	d.ensureMu.Lock()
	defer d.ensureMu.Unlock()
	var any bool
	var legacy []byte
	err := d.view(ctx, func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketUsers); b != nil {
			k, _ := b.Cursor().First()
			any = k != nil
		}
		if b := tx.Bucket(bucketMeta); b != nil {
			legacy = bytes.Clone(b.Get([]byte(app.PasswordHashKey)))
		}
		return nil
	})
	if err != nil || any {
		return false, err
	}
	hash, created := legacy, false
	if len(hash) == 0 {
		if hash, err = first(); err != nil {
			return false, err
		}
		created = true
	}
	stored := false
	err = d.update(ctx, func(tx *bolt.Tx) error {
		stored = false
		if b := tx.Bucket(bucketUsers); b != nil {
			if k, _ := b.Cursor().First(); k != nil {
				return nil // a user came meanwhile
			}
		}
		v, err := bumpAccess(tx)
		if err != nil {
			return err
		}
		stored = true
		return putUser(tx, app.User{Name: name, Role: app.RoleAdmin, Hash: hash, Created: at, Changed: at, Stamp: v})
	})
	return created && stored && err == nil, err
}
