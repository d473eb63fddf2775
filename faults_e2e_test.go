package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/storage"
)

// Retention shorter than a debounce window (events kept 3 s, swept every
// second, a 10 s window): the sweep keeps the event its pending delivery
// will send, and the sink gets it when the window ends.
func TestFault_RetentionShorterThanDebounce(t *testing.T) {
	sink := newLedgerSink(t, 200)
	dir := t.TempDir()
	config := writeConfig(t, dir, fmt.Sprintf(`
[retention]
events = "3s"
sweep = "@every 1s"

[[destination]]
name = "sink"
url = %q
timeout = "2s"
retry = ["1s"]

[[route]]
name = "entities"
source = "gh"
to = ["sink"]
key = "{body.id}"
debounce = "10s"
`, sink.url))
	p := start(t, config)
	body := []byte(`{"id": "entity-1"}`)
	sent := time.Now()
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "debounced-1")); r.code != 200 {
		t.Fatalf("post: %d %v", r.code, r.body)
	}
	deadline := sent.Add(40 * time.Second)
	for len(sink.missing([]string{"debounced-1"})) > 0 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(sent)
	if len(sink.missing([]string{"debounced-1"})) > 0 {
		t.Fatalf("the debounced event never reached the sink in %v (the sweep ran %d times):\n%s",
			took.Round(time.Second), strings.Count(p.logText(), "sweep done"), p.logText())
	}
	if took < 9*time.Second {
		t.Fatalf("delivered after %v, before its 10 s window ended", took)
	}
	t.Logf("delivered %v after it was accepted, %d sweeps meanwhile", took.Round(100*time.Millisecond), strings.Count(p.logText(), "sweep done"))
	p.stop(t)
}

// The data file emptied (a 0-byte file where events were accepted) or cut
// short (8 KiB, where bbolt would die of SIGBUS): serve refuses to start,
// naming the latest backup and the command that restores it, and changes
// nothing.
func TestFault_DataFileEmptiedOrTruncated(t *testing.T) {
	for _, size := range []int64{0, 8 << 10} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			dir := t.TempDir()
			backups := filepath.Join(dir, "backups")
			config := writeConfig(t, dir, fmt.Sprintf("[backup]\nschedule = \"@every 1s\"\ndir = %q\n", backups))
			p := start(t, config)
			for i := range 50 {
				body := []byte(fmt.Sprintf(`{"n": %d}`, i))
				if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, fmt.Sprint("kept-", i))); r.code != 200 {
					t.Fatalf("post: %d %v", r.code, r.body)
				}
			}
			var latest string
			for deadline := time.Now().Add(20 * time.Second); latest == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				latest, _ = app.LatestBackup(backups)
			}
			p.stop(t)
			if latest == "" {
				t.Fatal("no backup was taken")
			}
			latest, _ = app.LatestBackup(backups) // the schedule may have taken another before the stop
			data := filepath.Join(dir, "data", storage.FileName)
			if err := os.Truncate(data, size); err != nil {
				t.Fatal(err)
			}
			// Bounded: a serve that takes the file as new would run on.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "serve", "-config", config)
			cmd.Env = append(os.Environ(), "E2E_GH_SECRET="+e2eSecret)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("serve started on a data file of %d bytes:\n%s", size, out)
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "hookbox restore -config "+config+" "+latest) ||
				strings.Contains(string(out), "SIGBUS") || strings.Contains(string(out), "goroutine") {
				t.Fatalf("serve on a data file of %d bytes: %v\n%s", size, err, out)
			}
			if fi, err := os.Stat(data); err != nil || fi.Size() != size {
				t.Fatalf("the refused data file changed: %v %v", fi, err)
			}
			t.Logf("serve refused: %s", strings.TrimSpace(string(out)))
		})
	}
}
