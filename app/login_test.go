package app_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage/bboltstore"
)

// logBuffer is a log destination tests read while the code writes.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var shownPassword = regexp.MustCompile(`password=(\S+)`)

func mustOpenStore(t *testing.T, dir string) *bboltstore.DB {
	t.Helper()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func TestLogin_GeneratedOnce(t *testing.T) {
	dir := t.TempDir()
	cfg := app.StatusConfig{User: "admin"}
	db := mustOpenStore(t, dir)
	var logs logBuffer
	l, err := app.NewLogin(context.Background(), cfg, db, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Before Ensure (the listener not bound yet) nothing is generated,
	// logged or stored: a start that fails here leaves no password behind.
	if hash, _ := db.Meta(context.Background(), app.PasswordHashKey); hash != nil || logs.String() != "" {
		t.Fatalf("NewLogin generated a password: hash %q, log %q", hash, logs.String())
	}
	if l.Check("admin", "") {
		t.Fatal("an empty password passed before any was set")
	}
	if err := l.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	m := shownPassword.FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no password in the log: %q", logs.String())
	}
	pw := m[1]
	if !l.Check("admin", pw) || l.Check("admin", pw+"x") || l.Check("root", pw) {
		t.Fatal("the shown password does not log in, or a wrong one does")
	}
	db.Close()

	// The next start shows nothing and the same password still works.
	db = mustOpenStore(t, dir)
	defer db.Close()
	var logs2 logBuffer
	l2, err := app.NewLogin(context.Background(), cfg, db, slog.New(slog.NewTextHandler(&logs2, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := l2.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs2.String(), "password=") {
		t.Fatalf("a second password was generated: %q", logs2.String())
	}
	if !l2.Check("admin", pw) {
		t.Fatal("the password shown at the first start no longer works")
	}
}

func TestLogin_Request(t *testing.T) {
	dir := t.TempDir()
	db := mustOpenStore(t, dir)
	defer db.Close()
	var logs logBuffer
	l, err := app.NewLogin(context.Background(), app.StatusConfig{User: "admin"}, db, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Watch(ctx, dir)

	t.Run("OK", func(t *testing.T) {
		hash, err := app.HashPassword("correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		if err := app.WritePasswordRequest(dir, hash); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		if err := app.WaitPasswordRequest(wctx, dir); err != nil {
			t.Fatal(err)
		}
		if !l.Check("admin", "correct horse battery") {
			t.Fatal("the new password does not log in")
		}
		if stored, _ := db.Meta(context.Background(), app.PasswordHashKey); !bytes.Equal(stored, hash) {
			t.Fatal("the new hash is not in the data file")
		}
	})
	t.Run("ErrReadableByOthers", func(t *testing.T) {
		hash, _ := app.HashPassword("another password")
		path := filepath.Join(dir, app.PasswordRequestName)
		if err := os.WriteFile(path, hash, 0o644); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		if err := app.WaitPasswordRequest(wctx, dir); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("err = %v, want a refusal", err)
		}
		if l.Check("admin", "another password") || !l.Check("admin", "correct horse battery") {
			t.Fatal("a request others could write changed the password")
		}
		if !strings.Contains(logs.String(), "mode 0644") {
			t.Fatalf("the log does not say why: %q", logs.String())
		}
	})
	for _, c := range []struct {
		name, why string
		put       func(path string) error
	}{
		// The service user can put anything under the name: none of it may
		// stop the watcher (a FIFO once blocked its open for good), and
		// each is refused with a log line that says what it was.
		{"ErrFIFO", "a FIFO", mkfifo},
		{"ErrSymlink", "a symbolic link", func(path string) error {
			hash, _ := app.HashPassword("through a link")
			target := filepath.Join(t.TempDir(), "hash")
			if err := os.WriteFile(target, hash, 0o600); err != nil {
				return err
			}
			return os.Symlink(target, path)
		}},
		{"ErrTooLong", "too long", func(path string) error {
			return os.WriteFile(path, bytes.Repeat([]byte("$"), 4096), 0o600)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.put(filepath.Join(dir, app.PasswordRequestName)); errors.Is(err, errors.ErrUnsupported) {
				t.Skip(err)
			} else if err != nil {
				t.Fatal(err)
			}
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			defer wcancel()
			if err := app.WaitPasswordRequest(wctx, dir); err == nil || !strings.Contains(err.Error(), "refused") {
				t.Fatalf("err = %v, want a refusal", err)
			}
			if !strings.Contains(logs.String(), c.why) {
				t.Fatalf("the log does not say %q: %q", c.why, logs.String())
			}
			if !l.Check("admin", "correct horse battery") {
				t.Fatal("the password changed")
			}
		})
	}
	t.Run("ErrCheapHash", func(t *testing.T) {
		// A cost under the default would make guessing cheap.
		path := filepath.Join(dir, app.PasswordRequestName)
		cheap := []byte("$2a$04$abcdefghijklmnopqrstuu5sCZxvFf8bGpRHkZMIn0R9WTmBX9k8K")
		if err := os.WriteFile(path, cheap, 0o600); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		if err := app.WaitPasswordRequest(wctx, dir); err == nil {
			t.Fatal("a cost-4 hash was taken")
		}
	})
	t.Run("ErrNoServer", func(t *testing.T) {
		other := t.TempDir()
		hash, _ := app.HashPassword("nobody reads this")
		if err := app.WritePasswordRequest(other, hash); err != nil {
			t.Fatal(err)
		}
		wctx, wcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer wcancel()
		if err := app.WaitPasswordRequest(wctx, other); err == nil {
			t.Fatal("no server, yet the request was reported taken")
		}
		if _, err := os.Stat(filepath.Join(other, app.PasswordRequestName)); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("the request was left behind for a later start to take by surprise")
		}
	})
}

func TestLogin_SharedStore(t *testing.T) {
	// Two nodes on one store (as on PostgreSQL): a hash stored by one
	// process is taken up by the other's Watch.
	dir := t.TempDir()
	db := mustOpenStore(t, dir)
	defer db.Close()
	node1, _ := app.NewLogin(context.Background(), app.StatusConfig{User: "admin"}, db, slog.New(slog.NewTextHandler(&logBuffer{}, nil)))
	if err := node1.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	node2, _ := app.NewLogin(context.Background(), app.StatusConfig{User: "admin"}, db, slog.New(slog.NewTextHandler(&logBuffer{}, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go node2.Watch(ctx, "")
	hash, _ := app.HashPassword("set by hookbox passwd")
	if err := db.SetMeta(context.Background(), app.PasswordHashKey, hash); err != nil { // what passwd does on PostgreSQL
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !node2.Check("admin", "set by hookbox passwd") {
		if time.Now().After(deadline) {
			t.Fatal("the running node never took up the new hash")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLogin_PasswordInConfig(t *testing.T) {
	db := mustOpenStore(t, t.TempDir())
	defer db.Close()
	l, _ := app.NewLogin(context.Background(), app.StatusConfig{User: "admin", Password: "from-config"}, db, nil)
	hash, _ := app.HashPassword("not this one")
	if err := l.Set(context.Background(), hash); !errors.Is(err, app.ErrPasswordInConfig) {
		t.Fatalf("Set = %v, want ErrPasswordInConfig", err)
	}
	if !l.Check("admin", "from-config") || l.Check("admin", "not this one") {
		t.Fatal("the config's password is not the one checked")
	}
}

func TestHashPassword(t *testing.T) {
	for _, tc := range []struct {
		pw string
		ok bool
	}{{"short", false}, {"long enough", true}, {strings.Repeat("x", 73), false}, {"tab\there!", false}} {
		if _, err := app.HashPassword(tc.pw); (err == nil) != tc.ok {
			t.Errorf("HashPassword(%q) = %v, want ok %v", tc.pw, err, tc.ok)
		}
	}
}
