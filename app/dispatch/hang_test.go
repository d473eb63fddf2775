package dispatch_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// hangingAddr returns the address of a listener on 127.0.0.1 at port
// (0: any) whose accept queue is full: a TCP connect to it hangs (the
// kernel drops the SYN) until the dialer gives up. Closed at the end.
func hangingAddr(t testing.TB, port int) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // one connection fills it
		syscall.Close(fd)
		t.Fatal(err)
	}
	sa, _ := syscall.Getsockname(fd)
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	var held []net.Conn
	for len(held) < 8 {
		c, err := net.DialTimeout("tcp4", addr, 300*time.Millisecond)
		if err != nil {
			break // the queue is full: connects hang from here on
		}
		held = append(held, c)
	}
	t.Cleanup(func() {
		for _, c := range held {
			c.Close()
		}
		syscall.Close(fd)
	})
	return addr
}

// waitConnecting waits until a TCP connect to addr is in progress
// (SYN_SENT in /proc/net/tcp), so a test acts while a dial hangs.
func waitConnecting(t testing.TB, addr string, within time.Duration) {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	var p int
	fmt.Sscan(port, &p)
	want := fmt.Sprintf("0100007F:%04X", p)
	// The kernel says nothing when a connect starts waiting: /proc is read
	// again until it shows the SYN.
	apptest.Until(t, within, func() error {
		f, err := os.Open("/proc/net/tcp")
		if err != nil {
			t.Skipf("cannot see connections in progress: %v", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 3 && fields[2] == want && fields[3] == "02" { // SYN_SENT
				return nil
			}
		}
		return fmt.Errorf("no connect to %s in progress", addr)
	})
}
