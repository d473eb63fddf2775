//go:build unix

package rules_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time this process used: on a busy machine ns/op
// counts the waits for a core, CPU time much less so.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
