package app_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"

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

func mustOpenStore(t *testing.T, dir string) *bboltstore.DB {
	t.Helper()
	db, err := bboltstore.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return db
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
