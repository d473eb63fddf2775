package access_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
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
		if _, err := access.HashPassword(tc.pw); (err == nil) != tc.ok {
			t.Errorf("HashPassword(%q) = %v, want ok %v", tc.pw, err, tc.ok)
		}
	}
}

// now0 is the tests' fixed clock.
var now0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// Fixed: the config's user and password only, an admin; no token.
func TestFixed(t *testing.T) {
	a := access.Fixed("admin", "correct horse battery")
	id, ok := a.CheckPassword("admin", "correct horse battery")
	if !ok || id.Role != app.RoleAdmin || !a.Current(id) || id.Actor() != "admin" {
		t.Fatalf("fixed login: %+v %v", id, ok)
	}
	if _, ok := a.CheckPassword("admin", "wrong"); ok {
		t.Error("wrong password taken")
	}
	if _, ok := a.CheckPassword("bob", "correct horse battery"); ok {
		t.Error("another user taken with the fixed password")
	}
	if _, ok := a.CheckToken(app.NewTokenSecret()); ok {
		t.Error("a token taken without a store")
	}
}
