package sweep_test

import (
	"context"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/app/sweep"
	"hookbox/storage/bboltstore"
)

// now0 is the hour the audit entries start at.
var now0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// The sweep deletes the audit entries older than retention.audit, a chunk
// per transaction, and keeps the younger ones; a reload's period applies
// from the next sweep.
func TestSweeper_SweepAudit(t *testing.T) {
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for i := range 20 {
		if err := db.AppendAudit(ctx, app.AuditEntry{At: now0.Add(time.Duration(i) * time.Hour), Actor: "ann", Action: app.AuditLogin, Result: app.AuditOK}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse("test.toml", "[retention]\naudit = \"10h\"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Retention.Audit != 10*time.Hour {
		t.Fatalf("retention.audit = %v; want 10h", cfg.Retention.Audit)
	}
	sw := sweep.New(cfg, db)
	now := now0.Add(25 * time.Hour) // entries of hours 0..14 are older than 10h
	sw.Now = func() time.Time { return now }
	sw.Chunk = 4
	res, err := sw.Sweep(ctx)
	if err != nil || res.Audit != 15 {
		t.Fatalf("sweep = %+v, %v; want 15 audit entries", res, err)
	}
	left, err := db.Audit(ctx, app.AuditQuery{})
	if err != nil || len(left) != 5 || !left[len(left)-1].At.Equal(now0.Add(15*time.Hour)) {
		t.Fatalf("left %d entries, %v; want the 5 of hours 15..19", len(left), err)
	}
	cfg.Retention.Audit = time.Hour
	sw.Apply(cfg)
	if res, err := sw.Sweep(ctx); err != nil || res.Audit != 5 {
		t.Fatalf("sweep after Apply = %+v, %v; want the last 5", res, err)
	}
}
