package cli

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveLog is serve's log, signalling the line that says it started.
type serveLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	started chan struct{}
	once    sync.Once
}

func (l *serveLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bytes.Contains(p, []byte("hookbox started")) {
		l.once.Do(func() { close(l.started) })
	}
	return l.buf.Write(p)
}

func (l *serveLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// serveConfigFile writes a config serving on listen with data in dir.
func serveConfigFile(t *testing.T, dir, listen string) string {
	t.Helper()
	path := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf("[server]\nlisten = %q\ndata_dir = %q\n\n[[source]]\nname = \"shop\"\nprovider = \"shopify\"\nsecret = \"abcdefabcdefabcdefabcdef\"\n",
		listen, filepath.Join(dir, "data"))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestServe_Lifecycle(t *testing.T) {
	// A port in use stops the start before any other part runs: the
	// error names the part, and no password is made, no dispatcher runs.
	t.Run("PortInUse", func(t *testing.T) {
		busy, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer busy.Close()
		log := &serveLog{started: make(chan struct{})}
		err = servePath(context.Background(), serveConfigFile(t, t.TempDir(), busy.Addr().String()), slog.New(slog.NewTextHandler(log, nil)))
		if err == nil || !strings.HasPrefix(err.Error(), "start listeners: listen on "+busy.Addr().String()) {
			t.Fatalf("serve = %v; want the listeners' error, naming them", err)
		}
		if got := log.String(); got != "" {
			t.Fatalf("a part ran before the listeners were bound:\n%s", got)
		}
	})

	// Every part starts and stops: the end of serve's ctx stops them in
	// reverse, each well within its deadline, and serve returns nil.
	t.Run("StartStop", func(t *testing.T) {
		log := &serveLog{started: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- servePath(ctx, serveConfigFile(t, t.TempDir(), "127.0.0.1:0"), slog.New(slog.NewTextHandler(log, nil)))
		}()
		select {
		case <-log.started:
		case err := <-done:
			t.Fatalf("serve returned before it started: %v\n%s", err, log.String())
		case <-time.After(30 * time.Second):
			t.Fatalf("not started within 30 s:\n%s", log.String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("serve = %v\n%s", err, log.String())
		}
		got := log.String()
		if strings.Contains(got, "overran") || strings.Contains(got, "level=ERROR") {
			t.Fatalf("the stop reported trouble:\n%s", got)
		}
		if i, j := strings.Index(got, "shutting down"), strings.Index(got, "hookbox stopped"); i < 0 || j < i {
			t.Fatalf("want shutting down, then hookbox stopped:\n%s", got)
		}
	})
}
