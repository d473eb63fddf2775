package app_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

// Under a watchdog, Watch probes every beat and calls alive each time
// the probe came back; a probe that hangs (a committer stuck in a write)
// stops the beats until it returns, so the service manager restarts a
// stuck hookbox and nothing else does (issue 46).
func TestStorageHealth_WatchBeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &app.StorageHealth{}
		stuck := make(chan struct{})
		var probes, beats atomic.Int64
		probe := func() error {
			if probes.Add(1) == 3 {
				<-stuck // the third commit hangs
			}
			return errors.New("no space left on device") // failing is not stuck
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { h.Watch(ctx, probe, 10*time.Second, func() { beats.Add(1) }); close(done) }()
		time.Sleep(25 * time.Second) // the bubble's clock: two beats at one per 10 s
		synctest.Wait()
		if got := beats.Load(); got != 2 {
			t.Fatalf("%d beats in 25 s at one per 10 s, want 2", got)
		}
		time.Sleep(60 * time.Second) // the third probe hangs from 30 s on
		synctest.Wait()
		if got := beats.Load(); got != 2 {
			t.Fatalf("%d beats while the probe hangs, want still 2", got)
		}
		close(stuck)
		synctest.Wait()
		if got := beats.Load(); got != 3 {
			t.Fatalf("%d beats once the hung probe came back, want 3", got)
		}
		cancel()
		<-done
	})

	synctest.Test(t, func(t *testing.T) {
		h := &app.StorageHealth{}
		var probes atomic.Int64
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go h.Watch(ctx, func() error { probes.Add(1); return nil }, 0, func() { t.Error("a beat without a watchdog") })
		time.Sleep(time.Minute) // the bubble's clock: a minute of commits that work
		synctest.Wait()
		if got := probes.Load(); got != 0 {
			t.Fatalf("%d probes while commits work and no watchdog asks, want 0", got)
		}
	})
}
