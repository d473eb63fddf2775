// Package systemd speaks the service manager's side of a service: the
// listening sockets it passes (socket activation: LISTEN_PID, LISTEN_FDS,
// LISTEN_FDNAMES) and the notifications it reads (NOTIFY_SOCKET: READY=1,
// STOPPING=1, STATUS=, WATCHDOG=1). Both are a few lines of protocol
// (sd_listen_fds(3), sd_notify(3)), written here with the standard library.
package systemd

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// listenFDsStart is the first descriptor the manager passes (SD_LISTEN_FDS_START).
const listenFDsStart = 3

// Socket is one listening socket the manager passed, with the name the
// socket unit gave it (FileDescriptorName=, else the unit's name).
type Socket struct {
	Name     string
	Listener net.Listener
}

// Listeners returns the stream sockets passed to this process, in the
// order of the socket unit's ListenStream= lines, and unsets the LISTEN_*
// variables so that no child (a command destination) takes them for its
// own. Each descriptor is made close-on-exec for the same reason. None
// passed (or passed to another process: LISTEN_PID names it) is no
// sockets and no error.
func Listeners() ([]Socket, error) {
	defer func() {
		os.Unsetenv("LISTEN_PID")
		os.Unsetenv("LISTEN_FDS")
		os.Unsetenv("LISTEN_FDNAMES")
	}()
	n, err := passed(os.Getenv, os.Getpid())
	if err != nil || n == 0 {
		return nil, err
	}
	names := strings.Split(os.Getenv("LISTEN_FDNAMES"), ":")
	var socks []Socket
	for i := range n {
		fd := listenFDsStart + i
		syscall.CloseOnExec(fd)
		name := ""
		if i < len(names) {
			name = names[i]
		}
		f := os.NewFile(uintptr(fd), name)
		ln, err := net.FileListener(f) // a duplicate: the descriptor passed is closed below
		f.Close()
		if err != nil {
			for _, s := range socks {
				s.Listener.Close()
			}
			return nil, fmt.Errorf("socket %d passed by the service manager (LISTEN_FDS): %w", fd, err)
		}
		socks = append(socks, Socket{Name: name, Listener: ln})
	}
	return socks, nil
}

// passed reads how many descriptors the manager passed to process pid:
// none when LISTEN_PID is unset or names another process (the variables
// were inherited).
func passed(getenv func(string) string, pid int) (int, error) {
	p, fds := getenv("LISTEN_PID"), getenv("LISTEN_FDS")
	if p == "" || fds == "" {
		return 0, nil
	}
	if got, err := strconv.Atoi(p); err != nil || got != pid {
		return 0, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("LISTEN_FDS=%q: not a count of descriptors", fds)
	}
	return n, nil
}
