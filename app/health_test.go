package app_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
	"hookbox/storage/bboltstore"
)

// While commits fail, StorageHealth counts what was refused, logs a line a
// second at most (saying how many it left out), and says when commits
// work again.
func TestStorageHealth(t *testing.T) {
	clk := &fakeClock{t: now0}
	cfg, err := config.Parse("c.toml", "[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"s\"\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	db, err := bboltstore.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	h := app.NewStats(cfg, db, clk.Now).Storage
	var log bytes.Buffer
	h.Logger = slog.New(slog.NewTextHandler(&log, nil))
	recovered := 0
	h.OnRecover = func() { recovered++ }
	l := h.Logger

	full := errors.New("write hookbox.db: no space left on device")
	h.Committed(full)
	for range 1000 {
		h.Refused(l, full, "source", "gh")
		clk.Add(time.Millisecond / 2)
	}
	if n := strings.Count(log.String(), "msg=\"store event\""); n != 1 {
		t.Fatalf("%d lines for 1000 failures within half a second:\n%s", n, log.String())
	}
	clk.Add(time.Second)
	h.Refused(l, full, "source", "gh")
	if !strings.Contains(log.String(), "not_logged_since_last_line=999") {
		t.Fatalf("the second line does not count those left out:\n%s", log.String())
	}
	cur, failing, _ := h.State()
	if !failing || cur.Refused != 1001 || !cur.Since.Equal(now0) || cur.LastError != full.Error() {
		t.Fatalf("state = %+v, failing %v", cur, failing)
	}
	var se *app.StorageError
	if err := h.Err(); !errors.As(err, &se) || se.Refused != 1001 {
		t.Fatalf("Err = %v", err)
	}
	h.Committed(nil)
	_, failing, last := h.State()
	if failing || recovered != 1 || last.Refused != 1001 || h.Err() != nil || !strings.Contains(log.String(), "storage works again") {
		t.Fatalf("after a commit worked: failing %v, recovered %d, last %+v\n%s", failing, recovered, last, log.String())
	}
}
