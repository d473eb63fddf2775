package bboltstore_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

// An audit entry or a token's last use is bookkeeping: its commit is not
// reported to OnCommit, so that on a full disk, where such a small write
// fits in free pages while the events' commits fail, it never says the
// storage works again. Other writes are reported.
func TestOnCommit_QuietWrites(t *testing.T) {
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	now := time.Now()
	if err := db.CreateToken(ctx, app.Token{Name: "ci", Role: app.RoleViewer, Hash: app.TokenHash(app.NewTokenSecret()), Created: now}); err != nil {
		t.Fatal(err)
	}
	var reported atomic.Int64
	db.OnCommit(func(error) { reported.Add(1) })
	if err := db.AppendAudit(ctx, app.AuditEntry{At: now, Actor: "ann", Action: app.AuditLogin, Result: app.AuditOK}); err != nil {
		t.Fatal(err)
	}
	if err := db.TouchToken(ctx, "ci", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if n := reported.Load(); n != 0 {
		t.Fatalf("%d commits of quiet writes reported to OnCommit, want 0", n)
	}
	if err := db.SetMeta(ctx, "x", []byte("y")); err != nil {
		t.Fatal(err)
	}
	if n := reported.Load(); n != 1 {
		t.Fatalf("%d commits reported after a meta write, want 1", n)
	}
}
