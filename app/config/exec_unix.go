//go:build unix

package config

import "syscall"

// executable reports whether this process may execute the file at path
// (its x bits for hookbox's user, and no noexec mount).
func executable(path string) error { return syscall.Access(path, 0x1) } // X_OK
