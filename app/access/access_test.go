package access_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/storage/bboltstore"
)

func mustHash(t *testing.T, pw string) []byte {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(pw), 10) // the lowest cost ValidPasswordHash takes
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// auditActions returns the action/actor/target/result of every audit
// entry, oldest first.
func auditActions(t *testing.T, db *bboltstore.DB) []string {
	t.Helper()
	es, err := db.Audit(context.Background(), app.AuditQuery{Limit: app.MaxAuditLimit})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[len(es)-1-i] = e.Action + " " + e.Actor + " " + e.Target + " " + e.Result
	}
	return out
}

// twoNodes opens a bbolt store and two access.Service over it, as two nodes
// would have, both on clock.
func twoNodes(t *testing.T, clock func() time.Time) (*bboltstore.DB, *access.Service, *access.Service) {
	t.Helper()
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var nodes [2]*access.Service
	for i := range nodes {
		if nodes[i], err = access.New(context.Background(), app.StatusConfig{User: "admin"}, db, db, nil); err != nil {
			t.Fatal(err)
		}
		nodes[i].Now = clock
	}
	return db, nodes[0], nodes[1]
}

// access.Service over a real store: users and tokens work and stop working
// when changed, the last admin stays, each change leaves one audit entry
// with its actor, and a second Service over the store (another node) sees
// the changes after Refresh.
func TestAccess_Store(t *testing.T) {
	ctx := context.Background()
	now := now0
	db, a, b := twoNodes(t, func() time.Time { return now })
	root := app.Who{Actor: "root", Via: "cli", From: "local"}
	if err := a.AddUser(ctx, root, "ann", app.RoleAdmin, mustHash(t, "ann-pw")); err != nil {
		t.Fatal(err)
	}
	if err := a.AddUser(ctx, app.Who{Actor: "ann", Via: "session", From: "10.0.0.1"}, "bob", app.RoleOperator, mustHash(t, "bob-pw")); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.CheckPassword("bob", "bob-pw"); ok {
		t.Fatal("node B knows bob before a Refresh")
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	bob, ok := b.CheckPassword("bob", "bob-pw")
	if !ok || bob.Role != app.RoleOperator {
		t.Fatalf("node B: bob = %+v, %v after Refresh", bob, ok)
	}
	if _, ok := a.CheckPassword("bob", "wrong"); ok {
		t.Fatal("a wrong password passed")
	}

	// The last admin stays.
	if err := a.RemoveUser(ctx, root, "ann"); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("remove the last admin = %v; want %s", err, app.ECONFLICT)
	}
	if err := a.SetRole(ctx, root, "ann", app.RoleViewer); app.ErrorCode(err) != app.ECONFLICT {
		t.Fatalf("demote the last admin = %v; want %s", err, app.ECONFLICT)
	}

	// Giving bob the role he has changes nothing: his session goes on.
	if err := a.SetRole(ctx, root, "bob", app.RoleOperator); err != nil || !a.Current(bob) {
		t.Fatalf("same role: %v; session current = %v", err, a.Current(bob))
	}

	// A role change, a password change and a removal each end bob's
	// sessions, on both nodes.
	for _, c := range []struct {
		name       string
		change     func() error
		before, pw string // bob's password before and after ("": none)
	}{
		{"role", func() error { return a.SetRole(ctx, root, "bob", app.RoleViewer) }, "bob-pw", "bob-pw"},
		{"password", func() error { return a.SetPassword(ctx, root, "bob", mustHash(t, "bob-pw2")) }, "bob-pw", "bob-pw2"},
		{"remove", func() error { return a.RemoveUser(ctx, root, "bob") }, "bob-pw2", ""},
	} {
		id, ok := a.CheckPassword("bob", c.before)
		if !ok {
			t.Fatalf("%s: bob does not log in before", c.name)
		}
		if err := b.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if !a.Current(id) || !b.Current(id) {
			t.Fatalf("%s: bob's session ended before the change", c.name)
		}
		if err := c.change(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if a.Current(id) {
			t.Errorf("%s: bob's session lasts on node A", c.name)
		}
		if err := b.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if b.Current(id) {
			t.Errorf("%s: bob's session lasts on node B after Refresh", c.name)
		}
		if c.pw != "" {
			if _, ok := b.CheckPassword("bob", c.pw); !ok {
				t.Errorf("%s: bob does not log in with %q after it", c.name, c.pw)
			}
		} else if _, ok := b.CheckPassword("bob", "bob-pw2"); ok {
			t.Errorf("a removed bob logs in")
		}
	}

	// Tokens: work, stop at revoke, stop at expiry.
	ci, err := a.CreateToken(ctx, app.Who{Actor: "ann", Via: "session", From: "10.0.0.1"}, "ci", app.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	short, err := a.CreateToken(ctx, app.Who{Actor: "ann", Via: "session", From: "10.0.0.1"}, "short", app.RoleViewer, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	id, ok := b.CheckToken(ci)
	if !ok || id.Role != app.RoleOperator || !id.Token || id.Actor() != "token:ci" {
		t.Fatalf("ci = %+v, %v", id, ok)
	}
	sid, ok := b.CheckToken(short)
	if !ok {
		t.Fatal("short does not work")
	}
	now = now0.Add(time.Hour)
	if _, ok := b.CheckToken(short); ok || b.Current(sid) {
		t.Error("short works after its expiry")
	}
	if err := a.RevokeToken(ctx, root, "ci"); err != nil {
		t.Fatal(err)
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.CheckToken(ci); ok || b.Current(id) {
		t.Error("ci works after revoke")
	}

	want := []string{
		"user.add root ann ok",
		"user.add ann bob ok",
		"user.remove root ann failed",
		"user.role root ann failed",
		"user.role root bob ok",
		"user.role root bob ok",
		"user.password root bob ok",
		"user.remove root bob ok",
		"token.create ann ci ok",
		"token.create ann short ok",
		"token.revoke root ci ok",
	}
	if got := auditActions(t, db); !equalLines(got, want) {
		t.Errorf("audit:\n%v\nwant\n%v", got, want)
	}
}

func equalLines(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// A token made a moment ago by another node (or by the CLI on PostgreSQL)
// works at once on a node that has not refreshed yet: a token it does not
// know makes it read the store, at most once per 100 ms.
func TestAccess_TokenMadeElsewhere(t *testing.T) {
	ctx := context.Background()
	now := now0
	_, a, b := twoNodes(t, func() time.Time { return now })
	root := app.Who{Actor: "root", Via: "cli", From: "local"}
	first, err := a.CreateToken(ctx, root, "laptop", app.RoleViewer, 0)
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := b.CheckToken(first); !ok || id.Name != "laptop" || id.Role != app.RoleViewer {
		t.Fatalf("node B on a token made on node A a moment ago: %+v, %v; want laptop, viewer", id, ok)
	}
	second, err := a.CreateToken(ctx, root, "ci", app.RoleOperator, 0)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(50 * time.Millisecond)
	if _, ok := b.CheckToken(app.NewTokenSecret()); ok {
		t.Fatal("an unknown token was taken")
	}
	if _, ok := b.CheckToken(second); ok {
		t.Fatal("node B read the store again within 100 ms of a miss")
	}
	now = now.Add(100 * time.Millisecond)
	if _, ok := b.CheckToken(second); !ok {
		t.Fatal("node B did not read the store again 100 ms after a miss")
	}
}

// Two admins demote each other through two nodes' Service at once, 50
// changes from 50 goroutines (issue 42, broken 3): exactly one admin
// remains, and every change of the survivor is refused with ECONFLICT and
// the reason.
func TestAccess_LastAdminConcurrent(t *testing.T) {
	ctx := context.Background()
	_, a, b := twoNodes(t, func() time.Time { return now0 })
	root := app.Who{Actor: "root", Via: "cli", From: "local"}
	for _, name := range []string{"ann", "bob"} {
		if err := a.AddUser(ctx, root, name, app.RoleAdmin, mustHash(t, name+"-pw")); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 50
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			node, by, other := a, "ann", "bob"
			if i%2 == 1 {
				node, by, other = b, "bob", "ann"
			}
			<-start
			errs[i] = node.SetRole(ctx, app.Who{Actor: by, Via: "session", From: "10.0.0.1"}, other, app.RoleViewer)
		}()
	}
	close(start)
	wg.Wait()
	if err := a.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	var admins []string
	for _, u := range a.Users() {
		if u.Role == app.RoleAdmin {
			admins = append(admins, u.Name)
		}
	}
	if len(admins) != 1 {
		t.Fatalf("admins %q after %d concurrent demotions; want exactly one", admins, n)
	}
	refused := 0
	for i, err := range errs {
		switch {
		case err == nil:
		case app.ErrorCode(err) == app.ECONFLICT && strings.Contains(app.ErrorMessage(err), "last admin"):
			refused++
		default:
			t.Errorf("change %d = %v; want done or %s with the reason", i, err, app.ECONFLICT)
		}
	}
	if refused != n/2 {
		t.Errorf("%d changes refused; want the %d of the survivor %s", refused, n/2, admins[0])
	}
	// hookbox user role/remove print the reason.
	for _, op := range []string{access.OpUserRole, access.OpUserRemove} {
		ans := b.Apply(ctx, access.Request{Actor: "local:root", Op: op, Name: admins[0], Role: "viewer"})
		if ans.OK || !strings.Contains(ans.Error, admins[0]+" is the last admin") {
			t.Errorf("%s of the last admin from the command line: %+v; want the reason", op, ans)
		}
	}
}

// An entry stored as it was sent (by a hookbox before names were
// cleaned) is shown cleaned: the actor cut, overrides replaced.
func TestAccess_AuditShownCleaned(t *testing.T) {
	ctx := context.Background()
	db, a, _ := twoNodes(t, func() time.Time { return now0 })
	raw := "eve\u202e" + strings.Repeat("x", 900)
	if err := db.AppendAudit(ctx, app.AuditEntry{At: now0, Actor: raw, Via: "basic", From: "10.0.0.9", Action: app.AuditLogin,
		Detail: "wrong user or password \u2067x", Result: app.AuditFailed}); err != nil {
		t.Fatal(err)
	}
	es, err := a.Audit(ctx, app.AuditQuery{})
	if err != nil || len(es) != 1 {
		t.Fatalf("audit = %+v, %v", es, err)
	}
	if e := es[0]; len(e.Actor) > 70 || strings.ContainsAny(e.Actor+e.Detail, "\u202e\u2067") || !strings.HasPrefix(e.Actor, "eve\ufffdxx") {
		t.Errorf("shown %q (%d bytes), detail %q", e.Actor, len(e.Actor), e.Detail)
	}
}
