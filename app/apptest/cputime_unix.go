//go:build unix

package apptest

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time this process has used, user and system, on
// every core: what a benchmark reports next to ns/op, which on a busy
// machine counts the waits for a core too.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
