//go:build unix && !linux

package datadir

import (
	"os"

	"golang.org/x/sys/unix"
)

// openUnnamed fails where there is no O_TMPFILE: NewFile names its files.
func openUnnamed(int, os.FileMode) (int, error) { return -1, unix.EOPNOTSUPP }

func linkUnnamed(int, int, string) error { return unix.EOPNOTSUPP }
