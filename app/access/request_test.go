package access_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
)

// TestAccessRequests: a running server takes a command's request file,
// applies it through Service (audited as the command's local user) and
// answers; what the service user could put under a request's name (a file
// others may write, a FIFO, a link, a long file, a cheap hash) is refused
// with a log line, never stops the watcher, and changes nothing.
func TestAccessRequests(t *testing.T) {
	dir := t.TempDir()
	db := mustOpenStore(t, dir)
	defer db.Close()
	var logs logBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := access.New(ctx, app.StatusConfig{User: "admin"}, db, db, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	// The server's side is called when a request is there (serve does it
	// every Poll), so the test waits on nothing.
	ask := func(r access.Request) (access.Answer, error) {
		id, err := access.WriteRequest(dir, r)
		if err != nil {
			t.Fatal(err)
		}
		a.TakeRequests(ctx, dir)
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		return access.WaitAnswer(wctx, dir, id)
	}
	t.Run("OK", func(t *testing.T) {
		hash, _ := access.HashPassword("correct horse battery")
		ans, err := ask(access.Request{Op: access.OpUserPasswd, Name: "admin", Hash: string(hash), Actor: "local:ops"})
		if err != nil || !ans.OK {
			t.Fatalf("answer %+v, %v", ans, err)
		}
		if id, ok := a.CheckPassword("admin", "correct horse battery"); !ok || id.Role != app.RoleAdmin {
			t.Fatal("the new password does not log in as an admin")
		}
		es, _ := db.Audit(ctx, app.AuditQuery{Actor: "local:ops"})
		if len(es) != 1 || es[0].Action != app.AuditUserPassword || es[0].Via != "cli" {
			t.Fatalf("audit: %+v", es)
		}
	})
	t.Run("ErrNoLocalActor", func(t *testing.T) {
		ans, err := ask(access.Request{Op: access.OpUserList, Actor: "admin"})
		if err != nil || ans.OK || !strings.Contains(ans.Error, "local user") {
			t.Fatalf("answer %+v, %v", ans, err)
		}
	})
	t.Run("ErrCheapHash", func(t *testing.T) {
		cheap := "$2a$04$abcdefghijklmnopqrstuu5sCZxvFf8bGpRHkZMIn0R9WTmBX9k8K"
		ans, err := ask(access.Request{Op: access.OpUserAdd, Name: "cheap", Role: "viewer", Hash: cheap, Actor: "local:ops"})
		if err != nil || ans.OK || !strings.Contains(ans.Error, "cost") {
			t.Fatalf("answer %+v, %v", ans, err)
		}
	})
	const name = "access-0123456789abcdef0123456789abcdef.request"
	answer := filepath.Join(dir, strings.TrimSuffix(name, ".request")+".answer")
	for _, c := range []struct {
		name, why string
		put       func(path string) error
	}{
		{"ErrReadableByOthers", "mode 0644", func(path string) error {
			return os.WriteFile(path, []byte(`{"op":"user.remove","name":"admin","actor":"local:x"}`), 0o644)
		}},
		{"ErrFIFO", "a FIFO", mkfifo},
		{"ErrSymlink", "a symbolic link", func(path string) error {
			target := filepath.Join(t.TempDir(), "req")
			if err := os.WriteFile(target, []byte(`{"op":"user.remove","name":"admin","actor":"local:x"}`), 0o600); err != nil {
				return err
			}
			return os.Symlink(target, path)
		}},
		{"ErrTooLong", "too long", func(path string) error {
			return os.WriteFile(path, bytes.Repeat([]byte(" "), 8192), 0o600)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.put(filepath.Join(dir, name)); errors.Is(err, errors.ErrUnsupported) {
				t.Skip(err)
			} else if err != nil {
				t.Fatal(err)
			}
			a.TakeRequests(ctx, dir)
			if _, err := os.Lstat(answer); err != nil {
				t.Fatalf("no answer: %v", err)
			}
			b, _ := os.ReadFile(answer)
			os.Remove(answer)
			if !strings.Contains(string(b), "refused") {
				t.Fatalf("answer %s", b)
			}
			if !strings.Contains(logs.String(), c.why) {
				t.Fatalf("the log does not say %q: %q", c.why, logs.String())
			}
			if _, ok := a.CheckPassword("admin", "correct horse battery"); !ok {
				t.Fatal("the admin changed")
			}
		})
	}
	t.Run("ErrNoServer", func(t *testing.T) {
		other := t.TempDir()
		id, err := access.WriteRequest(other, access.Request{Op: access.OpUserList, Actor: "local:ops"})
		if err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer wcancel()
		if _, err := access.WaitAnswer(wctx, other, id); err == nil {
			t.Fatal("no server, yet an answer")
		}
		if ents, _ := os.ReadDir(other); len(ents) != 0 {
			t.Fatalf("the request was left behind for a later start to take by surprise: %v", ents)
		}
	})
}
