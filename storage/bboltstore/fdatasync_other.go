//go:build !linux

package bboltstore

import "os"

// fdatasync is fsync where the system has no fdatasync of its own.
func fdatasync(f *os.File) error { return f.Sync() }
