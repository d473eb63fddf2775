//go:build unix

package bboltstore

import (
	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// releaseMap drops every page of bbolt's map from this process's resident
// set, as release does for a backup's copy: the map is of the file,
// read-only and shared, so a page read again faults in again from the page
// cache. Open calls it after its scans: loading the remembered ids reads
// the whole expiry index, and the kernel maps the cached pages around each
// page faulted (fault-around, 64 KiB), so with 100,000 stored events the
// scan left 69 MB of a 110 MB file resident (docs/BENCHMARKS.md, "Memory
// and start"); loading releases as it goes, so the peak stays low too.
func releaseMap(tx *bolt.Tx) {
	data, size := tx.DB().Info().Data, tx.Size()
	if data == 0 || size <= 0 {
		return
	}
	// By address: the map is bbolt's, not a Go slice of this package.
	unix.Syscall(unix.SYS_MADVISE, data, uintptr(size), unix.MADV_DONTNEED)
}
