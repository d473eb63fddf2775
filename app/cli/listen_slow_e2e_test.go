package cli_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestListen_SlowLaptop: a laptop whose app stalls falls behind the VPS,
// which drops its stream (a "dropped" line) rather than hold more for it;
// listen connects again with the last event it received and the VPS sends
// the rest: every event reaches the app once.
func TestListen_SlowLaptop(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("E2E_STATUS_PASSWORD", "pw-e2e")
	vpsConfig := listenConfig(t, filepath.Join(dir, "vps"), freePort(t), "")
	vps := startWith(t, vpsConfig, nil)
	out, errOut, code := hookbox(t, nil, "token", "create", "-name", "laptop", "-role", "viewer", "-config", vpsConfig)
	if code != 0 || !viewerTokenLine.MatchString(out) {
		t.Fatalf("token create: %d\n%s%s", code, out, errOut)
	}
	token := viewerTokenLine.FindStringSubmatch(out)[1]

	// The laptop's app: it holds the first request until the test has sent
	// every event, then answers at once.
	release := make(chan struct{})
	var mu sync.Mutex
	got := map[string]int{}
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got[r.Header.Get("X-Shopify-Event-Id")]++
		first := len(got) == 1 && got[r.Header.Get("X-Shopify-Event-Id")] == 1
		mu.Unlock()
		if first {
			<-release
		}
	}))
	t.Cleanup(app.Close)
	t.Cleanup(func() {
		select {
		case <-release:
		default:
			close(release)
		}
	})

	ln := startListen(t, []string{"HOOKBOX_TOKEN=" + token}, "http://"+vps.addr, "-forward", app.URL+"/webhooks", "-source", "shop", "-topic", "orders/*")
	ln.wait(t, readyRE, 1)
	// 300 events of 64 KiB: more than the VPS holds for one listener
	// (2 MiB) and the sockets between them hold.
	const n = 300
	pad := strings.Repeat("y", 64<<10)
	for i := 1; i <= n; i++ {
		if code := shopifyPost(t, vps.addr, "shop", fmt.Sprintf("lap-%03d", i), []byte(fmt.Sprintf(`{"id":%d,"pad":"%s"}`, i, pad))); code != http.StatusOK {
			t.Fatalf("event %d: the VPS answered %d", i, code)
		}
	}
	close(release)
	lapRE := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d \S+  shop  orders/create  (lap-\d+)  → 200 OK  \d+ ms$`)
	ln.wait(t, lapRE, n)
	ln.wait(t, regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d \S+  dropped: `), 1)
	ln.wait(t, readyRE, 2)

	mu.Lock()
	defer mu.Unlock()
	for i := 1; i <= n; i++ {
		if id := fmt.Sprintf("lap-%03d", i); got[id] != 1 {
			t.Errorf("the app got %s %d times, want once", id, got[id])
		}
	}
	if len(got) != n {
		t.Errorf("the app got %d events, want %d", len(got), n)
	}
	lines := strings.Split(ln.text(), "\n")
	for i, l := range lines {
		if strings.Contains(l, "dropped: ") || strings.Contains(l, "connection lost") {
			t.Logf("listen: %s (after %d lines)", l, i)
		}
	}
}
