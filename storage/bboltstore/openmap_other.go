//go:build !unix

package bboltstore

import bolt "go.etcd.io/bbolt"

// releaseMap does nothing where madvise is not: see openmap_unix.go.
func releaseMap(*bolt.Tx) {}
