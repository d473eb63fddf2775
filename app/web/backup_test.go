package web_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/access"
	"hookbox/app/apptest"
	"hookbox/app/web"
)

// A backup download whose reader stops reading is cut once it has made no
// progress for the idle time, and the copy it was reading is closed (its
// unlinked temp file no longer open in the process). (The reader itself
// may not see the end for a while: the closed socket still holds what was
// written, and a tiny receive window makes loopback TCP back off.)
func TestAPI_BackupStalledReader(t *testing.T) {
	defer web.SetBackupIdle(300 * time.Millisecond)()
	_, db, _ := newAPIServer(t, apiConfig)
	body := make([]byte, 1<<20) // 1 MiB that does not compress (bodies are stored packed)
	rand.Read(body)
	now := time.Now()
	for i := range 16 {
		e := &app.Event{Source: "shop", ID: fmt.Sprintf("big-%d", i), Topic: "t", ReceivedAt: now, Body: body}
		if _, err := db.Accept(context.Background(), e, now.Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	s := web.New(mustConfig(t, apiConfig), web.Deps{Store: db, Health: db.Ping,
		Access: access.Fixed("ops", "pw-1234"),
		Backup: func() (*os.File, int64, error) { return db.Backup(dir) }})
	addr := serve(t, s.App())

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(4 << 10) // the server's writes block soon
	fmt.Fprintf(c, "GET /api/v1/backup HTTP/1.1\r\nHost: x\r\nAuthorization: Basic b3BzOnB3LTEyMzQ=\r\n\r\n")
	br := bufio.NewReaderSize(c, 4<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.ContentLength < 8<<20 {
		t.Fatalf("backup: %d, %d bytes", resp.StatusCode, resp.ContentLength)
	}
	if n := openCopies(t, dir); n != 1 {
		t.Fatalf("%d copies open during the download", n)
	}
	// The reader stalls; the server gives up after the idle time and
	// closes the copy, though the reader has not had it all.
	apptest.Eventually(t, 5*time.Second, "the copy closed after the download was cut", func() bool { return openCopies(t, dir) == 0 })
}

// openCopies counts the backup copies in dir this process holds open.
func openCopies(t *testing.T, dir string) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, dir+"/.backup-") {
			n++
		}
	}
	return n
}
