package storetest

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
)

// accessStore is what the access suites use of a store.
type accessStore interface {
	app.AccessStore
	app.AuditStore
	app.MetaStore
}

// openAccess opens a store for the access suites.
func openAccess(t *testing.T, open Opener) accessStore { return open(t) }

func mustVersion(t *testing.T, s accessStore) uint64 {
	t.Helper()
	v, err := s.AccessVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func findUser(a app.AccessData, name string) (app.User, bool) {
	for _, u := range a.Users {
		if u.Name == name {
			return u, true
		}
	}
	return app.User{}, false
}

func findToken(a app.AccessData, name string) (app.Token, bool) {
	for _, tk := range a.Tokens {
		if tk.Name == name {
			return tk, true
		}
	}
	return app.Token{}, false
}

func mustLoad(t *testing.T, s accessStore) app.AccessData {
	t.Helper()
	a, err := s.LoadAccess(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// testUsers: create, a conflict, role and password changes that move the
// Stamp and the version, remove, and every field read back.
func testUsers(t *testing.T, open Opener) {
	s := openAccess(t, open)
	v0 := mustVersion(t, s)
	u := app.User{Name: "ann", Role: app.RoleOperator, Hash: []byte("hash-1"), Created: T0.Add(123456789 * time.Nanosecond), Changed: T0}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(ctx, u); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("CreateUser twice = %v; want %s", err, app.ECONFLICT)
	}
	a := mustLoad(t, s)
	got, ok := findUser(a, "ann")
	if !ok {
		t.Fatalf("ann is not loaded: %+v", a)
	}
	if got.Role != u.Role || !bytes.Equal(got.Hash, u.Hash) || !got.Created.Truncate(time.Microsecond).Equal(u.Created.Truncate(time.Microsecond)) || !got.Changed.Equal(T0) || got.Stamp == 0 {
		t.Errorf("loaded %+v; want %+v with a Stamp", got, u)
	}
	if a.Version <= v0 || a.Version != mustVersion(t, s) {
		t.Errorf("version %d after a create (was %d, AccessVersion %d)", a.Version, v0, mustVersion(t, s))
	}
	stamps := map[uint64]bool{got.Stamp: true}
	for i, change := range []func() error{
		func() error { return s.SetUserRole(ctx, "ann", app.RoleAdmin, T0.Add(time.Minute), app.KeepAdmin) },
		func() error { return s.SetUserPassword(ctx, "ann", []byte("hash-2"), T0.Add(2*time.Minute)) },
	} {
		before := mustVersion(t, s)
		if err := change(); err != nil {
			t.Fatal(err)
		}
		u2, _ := findUser(mustLoad(t, s), "ann")
		if stamps[u2.Stamp] {
			t.Errorf("change %d kept stamp %d", i, u2.Stamp)
		}
		stamps[u2.Stamp] = true
		if after := mustVersion(t, s); after <= before {
			t.Errorf("change %d: version %d -> %d", i, before, after)
		}
	}
	u2, _ := findUser(mustLoad(t, s), "ann")
	if u2.Role != app.RoleAdmin || string(u2.Hash) != "hash-2" || !u2.Changed.Equal(T0.Add(2*time.Minute)) || !u2.Created.Equal(got.Created) {
		t.Errorf("after changes %+v", u2)
	}
	for _, err := range []error{
		s.SetUserRole(ctx, "bob", app.RoleViewer, T0, app.KeepAdmin),
		s.SetUserPassword(ctx, "bob", []byte("x"), T0),
		s.RemoveUser(ctx, "bob", app.KeepAdmin),
	} {
		if app.ErrorCode(err) != app.ENOTFOUND {
			t.Errorf("change of no user = %v; want %s", err, app.ENOTFOUND)
		}
	}
	before := mustVersion(t, s)
	if err := s.RemoveUser(ctx, "ann", app.KeepAdmin); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("remove the last admin = %v; want %s", err, app.ECONFLICT)
	}
	if err := s.SetUserRole(ctx, "ann", app.RoleViewer, T0, app.KeepAdmin); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("demote the last admin = %v; want %s", err, app.ECONFLICT)
	}
	if after := mustVersion(t, s); after != before {
		t.Errorf("refused changes moved the version %d -> %d", before, after)
	}
	// With the config's admin there, the store's last admin may go.
	if err := s.RemoveUser(ctx, "ann", app.AdminInConfig); err != nil {
		t.Fatal(err)
	}
	if _, ok := findUser(mustLoad(t, s), "ann"); ok || mustVersion(t, s) <= before {
		t.Errorf("ann still there (%v) or version unmoved", ok)
	}
	if err := s.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if u3, _ := findUser(mustLoad(t, s), "ann"); stamps[u3.Stamp] {
		t.Errorf("a new ann has an old stamp %d", u3.Stamp)
	}
}

// testTokens: create, conflicts by name, revoke, and a touch that keeps
// the later time and leaves the version.
func testTokens(t *testing.T, open Opener) {
	s := openAccess(t, open)
	hash := app.TokenHash(app.NewTokenSecret())
	tk := app.Token{Name: "ci", Role: app.RoleOperator, Hash: hash, Created: T0, CreatedBy: "ann", Expires: T0.Add(90 * 24 * time.Hour)}
	if err := s.CreateToken(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateToken(ctx, tk); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("CreateToken twice = %v; want %s", err, app.ECONFLICT)
	}
	never := app.Token{Name: "cron", Role: app.RoleViewer, Created: T0}
	never.Hash[0] = 1
	if err := s.CreateToken(ctx, never); err != nil {
		t.Fatal(err)
	}
	a := mustLoad(t, s)
	got, _ := findToken(a, "ci")
	if got.Role != tk.Role || got.Hash != tk.Hash || !got.Created.Equal(T0) || got.CreatedBy != "ann" || !got.Expires.Equal(tk.Expires) || !got.LastUsed.IsZero() || got.Stamp == 0 {
		t.Errorf("loaded %+v; want %+v", got, tk)
	}
	if n, _ := findToken(a, "cron"); !n.Expires.IsZero() || n.Stamp == got.Stamp {
		t.Errorf("cron = %+v", n)
	}
	v := mustVersion(t, s)
	for _, at := range []time.Time{T0.Add(time.Hour), T0.Add(time.Minute)} {
		if err := s.TouchToken(ctx, "ci", at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TouchToken(ctx, "nobody", T0); err != nil {
		t.Errorf("TouchToken of no token = %v", err)
	}
	if got, _ := findToken(mustLoad(t, s), "ci"); !got.LastUsed.Equal(T0.Add(time.Hour)) {
		t.Errorf("LastUsed = %v; want the later %v", got.LastUsed, T0.Add(time.Hour))
	}
	if after := mustVersion(t, s); after != v {
		t.Errorf("a touch moved the version %d -> %d", v, after)
	}
	if err := s.RevokeToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeToken(ctx, "ci"); app.ErrorCode(err) != app.ENOTFOUND {
		t.Errorf("RevokeToken twice = %v", err)
	}
	if _, ok := findToken(mustLoad(t, s), "ci"); ok || mustVersion(t, s) <= v {
		t.Error("ci still there or the version unmoved")
	}
}

// testEnsureFirstUser: a fresh store calls first once and keeps an admin;
// a second call does not; a legacy status password becomes the user.
func testEnsureFirstUser(t *testing.T, open Opener) {
	s := openAccess(t, open)
	calls := 0
	first := func() ([]byte, error) { calls++; return []byte("first-hash"), nil }
	for i, want := range []bool{true, false} {
		created, err := s.EnsureFirstUser(ctx, "admin", T0, first)
		if err != nil || created != want || calls != 1 {
			t.Fatalf("call %d: created %v, %v, %d calls; want %v and 1 call", i, created, err, calls, want)
		}
	}
	u, ok := findUser(mustLoad(t, s), "admin")
	if !ok || u.Role != app.RoleAdmin || string(u.Hash) != "first-hash" {
		t.Errorf("admin = %+v, %v", u, ok)
	}

	s = openAccess(t, open)
	if err := s.SetMeta(ctx, app.PasswordHashKey, []byte("legacy-hash")); err != nil {
		t.Fatal(err)
	}
	created, err := s.EnsureFirstUser(ctx, "admin", T0, func() ([]byte, error) { t.Error("first called despite a legacy hash"); return nil, nil })
	if err != nil || created {
		t.Fatalf("legacy: created %v, %v", created, err)
	}
	if u, ok := findUser(mustLoad(t, s), "admin"); !ok || u.Role != app.RoleAdmin || string(u.Hash) != "legacy-hash" {
		t.Errorf("legacy admin = %+v, %v", u, ok)
	}
}

// testLastAdminConcurrent: two admins demote (or remove) each other 50
// times at once, from 50 goroutines, in rounds: exactly one admin remains
// after each round, every change but one is refused with ECONFLICT and
// the reason, and the refused ones leave the survivor as it was.
func testLastAdminConcurrent(t *testing.T, open Opener) {
	s := openAccess(t, open)
	LastAdminRace(t, []app.AccessStore{s}, 50)
}

// LastAdminRace makes "ann" and "bob" admins through stores[0], then has
// n goroutines (spread over stores, as over nodes) demote or remove them
// at once, each other's name in turn; it fails t unless exactly one admin
// remains and every change of the survivor was refused with ECONFLICT and
// the reason. It runs two rounds: role changes, then removals.
func LastAdminRace(t *testing.T, stores []app.AccessStore, n int) {
	t.Helper()
	for _, remove := range []bool{false, true} {
		for _, name := range []string{"ann", "bob"} {
			err := stores[0].CreateUser(ctx, app.User{Name: name, Role: app.RoleAdmin, Hash: []byte("h"), Created: T0})
			if app.ErrorCode(err) == app.ECONFLICT {
				err = stores[0].SetUserRole(ctx, name, app.RoleAdmin, T0, app.KeepAdmin)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		start := make(chan struct{})
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s, name := stores[i%len(stores)], []string{"ann", "bob"}[i%2]
				<-start
				if remove {
					errs[i] = s.RemoveUser(ctx, name, app.KeepAdmin)
				} else {
					errs[i] = s.SetUserRole(ctx, name, app.RoleViewer, T0.Add(time.Minute), app.KeepAdmin)
				}
			}()
		}
		close(start)
		wg.Wait()
		data, err := stores[0].LoadAccess(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var admins []string
		for _, u := range data.Users {
			if u.Role == app.RoleAdmin {
				admins = append(admins, u.Name)
			}
		}
		if len(admins) != 1 {
			t.Fatalf("remove %v: admins %q after %d concurrent changes; want exactly one", remove, admins, n)
		}
		var ok, refused int
		for i, err := range errs {
			switch {
			case err == nil:
				ok++
			case app.ErrorCode(err) == app.ECONFLICT && strings.Contains(app.ErrorMessage(err), "last admin"):
				refused++
			case remove && app.ErrorCode(err) == app.ENOTFOUND:
				// removed already by another goroutine of the same name
			default:
				t.Errorf("remove %v: change %d = %v; want done or %s with the reason", remove, i, err, app.ECONFLICT)
			}
		}
		// The survivor's changes are all refused; the other's go through
		// (a removal once, the others finding no such user).
		if refused != n/2 || ok == 0 || !remove && ok != n-n/2 {
			t.Errorf("remove %v: %d done, %d refused of %d; want the %d changes of the survivor %s refused and the others done", remove, ok, refused, n, n/2, admins[0])
		}
	}
}
