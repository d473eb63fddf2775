//go:build !unix

package cmdsend

import (
	"os"
	"os/exec"
	"syscall"
)

// setGroup does nothing where there are no process groups.
func setGroup(*exec.Cmd) {}

// killGroup kills the process pgid only, where there are no groups.
func killGroup(pgid int) {
	if p, err := os.FindProcess(pgid); err == nil {
		p.Kill() //nolint:errcheck // gone already
	}
}

// signalName is sig's description.
func signalName(sig syscall.Signal) string { return sig.String() }
