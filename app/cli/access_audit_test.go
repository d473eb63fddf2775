package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
	"hookbox/storage/bboltstore"
	"hookbox/storage/postgres"
	"hookbox/storage/postgres/pgtest"
)

// TestAudit_ReloadBySignal: each SIGHUP leaves one config.reload entry by
// "system" via "signal": ok for a good config, failed with the refusal's
// first line for a bad one (PostgreSQL, read while the node runs).
func TestAudit_ReloadBySignal(t *testing.T) {
	url := pgtest.URL(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	good := fmt.Sprintf("[server]\nlisten = \"127.0.0.1:%d\"\n[status]\npassword = \"a status password\"\n"+
		"[storage]\nbackend = \"postgres\"\nurl = %q\n"+
		"[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"gh-secret\"\n", freePort(t), url)
	if err := os.WriteFile(config, []byte(good), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, clitest.Binary(t), config, nil)
	db, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	reloads := func() []app.AuditEntry {
		es, err := db.Audit(context.Background(), app.AuditQuery{Action: app.AuditConfigReload})
		if err != nil {
			t.Fatal(err)
		}
		return es
	}
	waitN := func(n int) []app.AuditEntry {
		var es []app.AuditEntry
		apptest.Within(10*time.Second, func() bool { es = reloads(); return len(es) >= n })
		return es
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	es := waitN(1)
	if len(es) != 1 || es[0].Actor != "system" || es[0].Via != "signal" || es[0].Result != app.AuditOK {
		t.Fatalf("after a good reload: %+v", es)
	}
	if err := os.WriteFile(config, []byte(good+"[[source]]\nname = \"gh\"\nprovider = \"nope\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.cmd.Process.Signal(syscall.SIGHUP)
	es = waitN(2)
	if len(es) != 2 || es[0].Result != app.AuditFailed || !strings.Contains(es[0].Detail, "config.toml") || strings.Contains(es[0].Detail, "\n") {
		t.Fatalf("after a refused reload: %+v", es)
	}
	p.stop(t)
}

// TestAudit_Restore: hookbox restore leaves one restore entry by
// local:USER via cli in the restored file.
func TestAudit_Restore(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	config := filepath.Join(dir, "config.toml")
	text := fmt.Sprintf("[server]\ndata_dir = %q\n[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"gh-secret\"\n", data)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	b, err := os.ReadFile(filepath.Join(data, "hookbox.db"))
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy.db")
	if err := os.WriteFile(copyPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := hookbox(t, nil, "restore", "-config", config, copyPath); code != 0 {
		t.Fatalf("restore: %d\n%s%s", code, out, errOut)
	}
	db, err = bboltstore.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, err := db.Audit(context.Background(), app.AuditQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].Action != app.AuditRestore || !strings.HasPrefix(es[0].Actor, "local:") || es[0].Via != "cli" || es[0].Target != "copy.db" {
		t.Fatalf("audit after restore: %+v", es)
	}
}
