package backup_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/alert"
	"hookbox/app/apptest"
	"hookbox/app/backup"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
)

func backupConfig(t *testing.T, dataDir, extra string) *app.Config {
	t.Helper()
	cfg, err := config.Parse("c.toml", fmt.Sprintf("[server]\ndata_dir = %q\n%s\n[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"s\"\n",
		dataDir, extra), nil)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func backupFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestBackuper_KeepPrunes(t *testing.T) {
	dataDir := t.TempDir()
	cfg := backupConfig(t, dataDir, "[backup]\nkeep = 3\n")
	if cfg.Backup.Schedule != "@daily" || cfg.Backup.Dir != filepath.Join(dataDir, "backups") || cfg.Backup.Keep != 3 {
		t.Fatalf("backup config = %+v", cfg.Backup)
	}
	db, err := bboltstore.Open(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 3, 1, 23, 59, 58, 0, time.UTC)
	b := backup.New(cfg, db)
	b.Now = func() time.Time { return now }
	if at, _, err := b.Last(); !at.IsZero() || err != nil {
		t.Fatalf("before any backup: %v %v", at, err)
	}
	var want []string
	for i := range 5 {
		e := &app.Event{Source: "gh", ID: fmt.Sprintf("e-%d", i), ReceivedAt: now, Body: []byte("{}")}
		if _, err := db.Accept(context.Background(), e, now.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
		if i == 3 { // what a run killed mid-copy leaves behind
			os.WriteFile(filepath.Join(cfg.Backup.Dir, ".hookbox-20260301-000000.db.123.tmp"), []byte("half"), 0o600)
		}
		st, err := b.Backup(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("hookbox-%06d-%s.db", i+1, now.Format("20060102-150405"))
		if st.Path != filepath.Join(cfg.Backup.Dir, name) || st.Size == 0 || !st.At.Equal(now) {
			t.Fatalf("backup %d: %+v", i, st)
		}
		want = append(want, name)
		now = now.Add(time.Second)
	}
	if got := backupFiles(t, cfg.Backup.Dir); !slices.Equal(got, want[2:]) {
		t.Fatalf("after 5 backups with keep = 3: %v, want %v", got, want[2:])
	}
	// The newest copy is complete: every event is in it.
	newest := filepath.Join(cfg.Backup.Dir, want[4])
	if err := bboltstore.CheckFile(newest); err != nil {
		t.Fatal(err)
	}
	restored := t.TempDir()
	if _, err := bboltstore.Restore(restored, newest, now); err != nil {
		t.Fatal(err)
	}
	rdb, err := bboltstore.Open(restored)
	if err != nil {
		t.Fatal(err)
	}
	if ids, events, _ := rdb.Counts(context.Background()); ids != 5 || events != 5 {
		t.Errorf("restored copy: %d ids, %d events; want 5, 5", ids, events)
	}
	rdb.Close()

	// A restart finds the newest backup for the status page.
	at, size, err := backup.New(cfg, db).Last()
	if err != nil || !at.Equal(now.Add(-time.Second)) || size == 0 {
		t.Errorf("after restart: last backup %v, %d bytes, %v", at, size, err)
	}
}

// The clock ran ahead, then was set right: the backups made since are
// the newest whatever their names' times say, so pruning keeps them and
// deletes the ones made while the clock was wrong; backups named by older
// builds (time only) are older than any of them.
func TestBackuper_PrunesInCreationOrder(t *testing.T) {
	dataDir := t.TempDir()
	cfg := backupConfig(t, dataDir, "[backup]\nkeep = 3\n")
	db, err := bboltstore.Open(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := os.MkdirAll(cfg.Backup.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(cfg.Backup.Dir, "hookbox-20260101-000000.db") // an older build's
	if err := os.WriteFile(old, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := backup.New(cfg, db)
	var now time.Time
	b.Now = func() time.Time { return now }
	var made []string
	for i, at := range []time.Time{
		time.Date(2031, 5, 1, 3, 0, 0, 0, time.UTC), // the clock ran years ahead
		time.Date(2031, 5, 2, 3, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 1, 3, 0, 0, 0, time.UTC), // and was set right
		time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 2, 3, 0, 0, 0, time.UTC), // the same second twice
	} {
		now = at
		st, err := b.Backup(context.Background())
		if err != nil {
			t.Fatalf("backup %d: %v", i, err)
		}
		made = append(made, filepath.Base(st.Path))
	}
	if got := backupFiles(t, cfg.Backup.Dir); !slices.Equal(got, made[2:]) {
		t.Fatalf("kept %v; want the three made last, %v", got, made[2:])
	}
	latest, err := app.LatestBackup(cfg.Backup.Dir)
	if err != nil || latest != filepath.Join(cfg.Backup.Dir, made[4]) {
		t.Fatalf("LatestBackup = %q, %v; want %s", latest, err, made[4])
	}
	if at, _, _ := backup.New(cfg, db).Last(); !at.Equal(now) {
		t.Fatalf("after a restart the last backup is %v, want %v", at, now)
	}
}

// A backup that cannot be written alerts once per failure streak, says
// when backups work again, and keeps the last good one on the status page.
func TestBackuper_FailureAlerts(t *testing.T) {
	sink := apptest.NewAlertSink(t)
	dataDir := t.TempDir()
	// A directory under a regular file cannot be created, even by root.
	blocker := filepath.Join(dataDir, "not-a-dir")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := backupConfig(t, dataDir, fmt.Sprintf("[backup]\ndir = %q\n[alerts]\nurl = %q\n", filepath.Join(blocker, "backups"), sink.URL))
	db, err := bboltstore.Open(dataDir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	alerter := alert.New(cfg, db)
	b := backup.New(cfg, db)
	b.Alert = alerter.Backup
	ctx := context.Background()

	b.Run(ctx)
	b.Run(ctx)
	msgs := sink.Messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0], "backup failed") {
		t.Fatalf("alerts after two failures: %q", msgs)
	}
	if _, _, err := b.Last(); err == nil {
		t.Error("Last reports no error after a failed backup")
	}
	// Ingest does not care.
	e := &app.Event{Source: "gh", ID: "during", ReceivedAt: time.Now(), Body: []byte("{}")}
	if _, err := db.Accept(ctx, e, time.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}

	b.Dir = filepath.Join(dataDir, "backups")
	b.Run(ctx)
	b.Run(ctx)
	msgs = sink.Messages()
	if len(msgs) != 2 || !strings.Contains(msgs[1], "work again") {
		t.Fatalf("alerts after recovery: %q", msgs)
	}
	if at, size, err := b.Last(); at.IsZero() || size == 0 || err != nil {
		t.Errorf("after recovery: %v %d %v", at, size, err)
	}
}

func TestParseConfig_Backup(t *testing.T) {
	cfg := backupConfig(t, "/var/lib/hookbox", "[backup]\nschedule = \"off\"\n")
	if cfg.Backup.Schedule != "" {
		t.Errorf("schedule off = %q", cfg.Backup.Schedule)
	}
	for _, tt := range []struct{ toml, key string }{
		{"[backup]\nschedule = \"nightly\"\n", "backup.schedule"},
		{"[backup]\nkeep = 0\n", "backup.keep"},
		{"[backup]\nkept = 3\n", "backup.kept"},
	} {
		_, err := config.Parse("c.toml", tt.toml+"[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"s\"\n", nil)
		if ce, ok := err.(*app.ConfigError); !ok || ce.Key != tt.key {
			t.Errorf("%q: err = %v, want key %s", tt.toml, err, tt.key)
		}
	}
}
