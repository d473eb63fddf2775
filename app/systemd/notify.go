package systemd

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"time"
)

// Notifier sends state changes to the service manager over NOTIFY_SOCKET
// (a unit with Type=notify). The zero Notifier, and one made where the
// variable is unset, sends nothing.
type Notifier struct {
	addr     string        // the socket's path, "@name" for an abstract one
	watchdog time.Duration // WatchdogSec=, 0: none asked
}

// NewNotifier reads NOTIFY_SOCKET, WATCHDOG_USEC and WATCHDOG_PID and
// unsets them, so that a child does not notify in this process's name.
func NewNotifier() *Notifier {
	n := &Notifier{addr: os.Getenv("NOTIFY_SOCKET"), watchdog: watchdog(os.Getenv, os.Getpid())}
	for _, v := range []string{"NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID"} {
		os.Unsetenv(v)
	}
	return n
}

// watchdog reads WatchdogSec= as the manager passes it: 0 when unset or
// meant for another process.
func watchdog(getenv func(string) string, pid int) time.Duration {
	if p := getenv("WATCHDOG_PID"); p != "" {
		if got, err := strconv.Atoi(p); err != nil || got != pid {
			return 0
		}
	}
	us, err := strconv.ParseInt(getenv("WATCHDOG_USEC"), 10, 64)
	if err != nil || us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// Enabled reports whether a manager listens.
func (n *Notifier) Enabled() bool { return n != nil && n.addr != "" }

// Watchdog is the unit's WatchdogSec= (0: none): a WATCHDOG=1 must come
// more often than that, or the manager kills and restarts the service.
func (n *Notifier) Watchdog() time.Duration {
	if n == nil {
		return 0
	}
	return n.watchdog
}

// Notify sends state, lines of VAR=value ("READY=1", "STATUS=serving").
func (n *Notifier) Notify(state string) error {
	if !n.Enabled() {
		return nil
	}
	// Go reads a leading @ as the abstract namespace, as systemd means it.
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: n.addr, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("notify the service manager: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return fmt.Errorf("notify the service manager: %w", err)
	}
	return nil
}
