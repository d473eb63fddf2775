package cli_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHostile_StalledListeners: 64 streams (16 viewer tokens, 4 each: the
// most a node takes) whose clients connect and never read, while events of
// 1 MiB arrive one after another (each stream's writer takes each in turn): the peak resident memory stays
// under peakRSSLimit, each stream holding a bounded share (issue 42: every
// listener kept its own base64 JSON copies of each event, and fasthttp's
// pipe a copy of each whole message written). The same load on a server
// nobody listens to is measured first, for comparison.
func TestHostile_StalledListeners(t *testing.T) {
	alone := stalledListeners(t, 0)
	stalled := stalledListeners(t, 64)
	t.Logf("peak RSS (VmHWM) after %d events of 1 MiB from %d sender: %s with nobody listening; %s with 64 streams that never read",
		stalledEvents, stalledSenders, alone, stalled)
	if stalled.hwm<<10 > peakRSSLimit {
		t.Errorf("peak RSS %d MiB with 64 stalled streams; want under %d MiB", stalled.hwm>>10, peakRSSLimit>>20)
	}
}

// stalledEvents is how many events of 1 MiB stalledListeners sends.
const stalledEvents, stalledSenders = 48, 1

// rss is a process's memory in KiB: its peak (VmHWM), and its anonymous
// and file-backed (bbolt's map) resident parts at the end.
type rss struct{ hwm, anon, file int }

func (r rss) String() string {
	return fmt.Sprintf("%d MiB (RssAnon %d MiB, RssFile %d MiB)", r.hwm>>10, r.anon>>10, r.file>>10)
}

// stalledListeners starts a hookbox with streams that never read, sends it
// stalledEvents events of 1 MiB and returns its memory.
func stalledListeners(t *testing.T, streams int) rss {
	dir := t.TempDir()
	t.Setenv("E2E_STATUS_PASSWORD", "pw-e2e")
	config := listenConfig(t, filepath.Join(dir, "vps"), freePort(t), "")
	vps := startBinary(t, shippedBinary(t), config, nil)
	defer vps.cmd.Process.Kill()
	var tokens []string
	for i := range (streams + 3) / 4 {
		out, errOut, code := hookbox(t, nil, "token", "create", "-name", fmt.Sprint("stalled-", i), "-role", "viewer", "-config", config)
		if code != 0 || !viewerTokenLine.MatchString(out) {
			t.Fatalf("token create: %d\n%s%s", code, out, errOut)
		}
		tokens = append(tokens, viewerTokenLine.FindStringSubmatch(out)[1])
	}
	for i := range streams {
		c, err := net.Dial("tcp", vps.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(c, "GET /api/v1/stream HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", vps.addr, tokens[i/4])
		// Read the head alone, a byte at a time: the stream is subscribed.
		c.SetReadDeadline(time.Now().Add(time.Minute))
		var head []byte
		for !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
			b := make([]byte, 1)
			if _, err := c.Read(b); err != nil {
				t.Fatalf("stream %d: %v after %q", i, err, head)
			}
			head = append(head, b[0])
		}
		if !strings.HasPrefix(string(head), "HTTP/1.1 200") {
			t.Fatalf("stream %d: %q", i, head)
		}
	}
	var wg sync.WaitGroup
	codes := make(chan int, stalledEvents)
	for w := range stalledSenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < stalledEvents; i += stalledSenders {
				b := []byte(fmt.Sprintf(`{"id":%d,"pad":"`, i))
				b = append(b, bytes.Repeat([]byte("x"), 1<<20-len(b)-2)...)
				codes <- shopifyPost(t, vps.addr, "shop", fmt.Sprint("stalled-", i), append(b, `"}`...))
			}
		}()
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Fatalf("an event: %d", code)
		}
	}
	var r rss
	r.hwm, r.anon, r.file = vmHWM(t, vps.cmd.Process.Pid)
	return r
}
