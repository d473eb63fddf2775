package bboltstore

import (
	"os"

	"golang.org/x/sys/unix"
)

// fdatasync writes f's data and what reading it back needs (its size),
// not its times: one journal commit less than fsync on an append.
func fdatasync(f *os.File) error { return unix.Fdatasync(int(f.Fd())) }
