//go:build linux

package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"hookbox/storage/bboltstore"
)

// mountTmpfs mounts a tmpfs of size bytes on a new temp dir, unmounted at
// the end; it skips where mounting is not allowed (not root, no
// CAP_SYS_ADMIN).
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fillUpTo fills the file system of path, then frees room bytes of it.
func fillUpTo(t *testing.T, path string, room int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 64<<10)
	var n int64
	for {
		w, err := f.Write(zeros)
		n += int64(w)
		if err != nil {
			break // ENOSPC: full
		}
	}
	if err := f.Truncate(max(n-room, 0)); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// postRaw sends a GitHub-signed event and returns the answer's code, its
// Retry-After and its body.
func postRaw(t *testing.T, addr, id string, body []byte) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+addr+"/in/gh", bytes.NewReader(body))
	for k, v := range githubHeaders(body, e2eSecret, id) {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(raw)
}

// The disk under hookbox's data dir fills up: senders get 503 with
// Retry-After, never a 200 for an event that was not stored; when space
// returns ingest goes on, every acknowledged event is there and the file
// passes bbolt's check.
func TestFault_DiskFull(t *testing.T) {
	mnt := mountTmpfs(t, 4<<20)
	config := writeConfig(t, mnt)
	p := start(t, config)
	filler := filepath.Join(mnt, "filler")
	fillUpTo(t, filler, 1<<20)

	// Random: events are stored compressed, and these must take room.
	pad := make([]byte, 1750)
	rand.Read(pad)
	body := append(append([]byte(`{"pad":"`), hex.EncodeToString(pad)...), `"}`...)
	var acked, failed []string
	for i := 0; len(failed) < 20; i++ {
		if i == 5000 {
			t.Fatalf("the disk never filled up (%d accepted)", len(acked))
		}
		id := fmt.Sprint("full-", i)
		code, retryAfter, answer := postRaw(t, p.addr, id, body)
		switch {
		case code == 200 && answer == `{"status":"accepted","id":"`+id+`"}`:
			acked = append(acked, id)
		case code == 503 && retryAfter != "" && answer == `{"status":"error","error":"storage unavailable, retry later"}`:
			failed = append(failed, id)
		default:
			t.Fatalf("%s with the disk filling: %d %q (Retry-After %q)", id, code, answer, retryAfter)
		}
	}
	t.Logf("disk full after %d accepted events; then %d answers of 503", len(acked), len(failed))

	// Space returns: the senders' retries are accepted, nothing was stored twice.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	for _, id := range failed {
		if code, _, answer := postRaw(t, p.addr, id, body); code != 200 || answer != `{"status":"accepted","id":"`+id+`"}` {
			t.Fatalf("retry of %s after space returned: %d %s", id, code, answer)
		}
	}
	for _, id := range acked {
		if code, _, answer := postRaw(t, p.addr, id, body); code != 200 || answer != `{"status":"duplicate","id":"`+id+`"}` {
			t.Fatalf("re-send of acknowledged %s: %d %s", id, code, answer)
		}
	}
	p.stop(t)

	db, err := bboltstore.Open(filepath.Join(mnt, "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Check(); err != nil {
		t.Fatalf("bbolt check: %v", err)
	}
	for _, id := range append(acked, failed...) {
		if _, _, ok, err := db.LookupID(context.Background(), "gh", id); !ok || err != nil {
			t.Fatalf("%s is not remembered: %v", id, err)
		}
	}
}
