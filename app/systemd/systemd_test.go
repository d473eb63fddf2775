package systemd

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

func TestPassed(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      map[string]string
		want     int
		wantsErr bool
	}{
		{"none", nil, 0, false},
		{"ours", map[string]string{"LISTEN_PID": "42", "LISTEN_FDS": "2"}, 2, false},
		{"inherited from a parent", map[string]string{"LISTEN_PID": "41", "LISTEN_FDS": "2"}, 0, false},
		{"no pid", map[string]string{"LISTEN_FDS": "1"}, 0, false},
		{"not a count", map[string]string{"LISTEN_PID": "42", "LISTEN_FDS": "x"}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := passed(func(k string) string { return tc.env[k] }, 42)
			if got != tc.want || (err != nil) != tc.wantsErr {
				t.Fatalf("passed = %d, %v; want %d, error %v", got, err, tc.want, tc.wantsErr)
			}
		})
	}
}

func TestWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want time.Duration
	}{
		{"none", nil, 0},
		{"ours", map[string]string{"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"}, 30 * time.Second},
		{"no pid", map[string]string{"WATCHDOG_USEC": "2000000"}, 2 * time.Second},
		{"another process's", map[string]string{"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "7"}, 0},
		{"garbage", map[string]string{"WATCHDOG_USEC": "soon"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := watchdog(func(k string) string { return tc.env[k] }, 42); got != tc.want {
				t.Fatalf("watchdog = %v, want %v", got, tc.want)
			}
		})
	}
}

// The notifications reach a real unixgram socket, as systemd reads them,
// by path and in the abstract namespace (@name).
func TestNotifier_Notify(t *testing.T) {
	for _, addr := range []string{filepath.Join(t.TempDir(), "notify"), "@hookbox-test-notify-" + t.Name()} {
		t.Run(addr[:1], func(t *testing.T) {
			conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: addr, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			n := &Notifier{addr: addr}
			if err := n.Notify("READY=1\nSTATUS=serving"); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 256)
			k, err := conn.Read(buf)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := string(buf[:k]), "READY=1\nSTATUS=serving"; got != want {
				t.Fatalf("datagram %q, want %q", got, want)
			}
		})
	}
	var none *Notifier
	if err := none.Notify("READY=1"); err != nil || none.Enabled() || none.Watchdog() != 0 {
		t.Fatalf("a nil notifier: %v, enabled %v", err, none.Enabled())
	}
}
