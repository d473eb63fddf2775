//go:build unix

package cmdsend

import (
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// setGroup makes cmd's process the leader of a process group of its own,
// so that its children can be killed with it (and a terminal's Ctrl-C
// to hookbox does not reach them).
func setGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup sends SIGKILL to every process of the group pgid. A group
// that is gone already is not an error.
func killGroup(pgid int) {
	if pgid > 0 {
		syscall.Kill(-pgid, syscall.SIGKILL) //nolint:errcheck // ESRCH: nothing left
	}
}

// signalName is the name of sig as a shell prints it: SIGKILL.
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return sig.String()
}
