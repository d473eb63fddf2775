//go:build unix

package access_test

import "syscall"

// mkfifo makes a FIFO at path, as a hostile service user would.
func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
