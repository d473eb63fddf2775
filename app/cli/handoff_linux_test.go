package cli_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"hookbox/app/apptest"
	"hookbox/app/cli/clitest"
)

// TestPasswordHandoff_FIFOSwap is issue 24, finding 6, on the real binary:
// whoever owns the data directory (the service user) swaps the password
// request (now an access request of hookbox user, token or passwd) for a FIFO with renameat2(RENAME_EXCHANGE), in a tight loop, so
// that the server's watcher finds a regular file when it looks and a FIFO
// when it opens. The watcher must refuse the FIFO with a log line and keep
// watching: a genuine hookbox passwd afterwards still changes the password
// within passwd's own bound. (Before the fix the watcher's open blocked on
// the FIFO for good and every later passwd timed out.)
func TestPasswordHandoff_FIFOSwap(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	config := filepath.Join(dir, "config.toml")
	text := fmt.Sprintf("[server]\nlisten = \"127.0.0.1:%d\"\ndata_dir = %q\n\n"+
		"[[source]]\nname = \"gh\"\nprovider = \"github\"\nsecret = \"gh-secret\"\n", freePort(t), data)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, clitest.Binary(t), config, nil)

	req := filepath.Join(data, "access-"+strings.Repeat("0", 32)+".request")
	fifo := filepath.Join(data, ".swap-fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A regular request (not a valid hash: the server refuses and moves it
	// aside, and the swapper puts another) and the FIFO trade places.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			// Nothing but the exchange in the loop while both names are
			// there: the watcher's look and open are microseconds apart.
			for range 1000 {
				if unix.Renameat2(unix.AT_FDCWD, req, unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE) != nil {
					break
				}
			}
			// The server moved one aside (refused): a regular file and a
			// FIFO again, one under each name.
			a, errA := os.Lstat(req)
			b, errB := os.Lstat(fifo)
			if errA != nil || errB != nil || a.Mode().Type() == b.Mode().Type() {
				os.Remove(req)
				os.Remove(fifo)
				os.WriteFile(req, []byte("not a request\n"), 0o600)
				unix.Mkfifo(fifo, 0o600)
			}
		}
	}()
	refusedFIFO := func() bool {
		for _, line := range strings.Split(p.logText(), "\n") {
			if strings.Contains(line, "access request refused") && strings.Contains(line, "not a regular file: a FIFO") {
				return true
			}
		}
		return false
	}
	apptest.Within(45*time.Second, refusedFIFO)
	close(stop)
	wg.Wait()
	if !refusedFIFO() {
		t.Errorf("within 45 s of swapping, the server did not log refusing a FIFO as the request:\n%s", p.logText())
	}
	for _, n := range []string{req, fifo, filepath.Join(data, "access-"+strings.Repeat("0", 32)+".answer")} {
		os.Remove(n)
	}

	// A genuine passwd now: the watcher must still be watching.
	start := time.Now()
	out, errOut, code := hookbox(t, []byte("a genuine new password\n"), "passwd", "-config", config)
	if code != 0 || !strings.Contains(out, "the running server") {
		t.Fatalf("passwd after the FIFO swap: exit %d after %v\n%s%s\nserver log:\n%s", code, time.Since(start).Round(time.Millisecond), out, errOut, p.logText())
	}
	t.Logf("passwd after the FIFO swap took %v", time.Since(start).Round(time.Millisecond))
	r, _ := http.NewRequest(http.MethodGet, "http://"+p.addr+"/api/v1/stats", nil)
	r.SetBasicAuth("admin", "a genuine new password")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login with the new password: %d", resp.StatusCode)
	}
	p.stop(t)
}
