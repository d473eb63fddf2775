//go:build unix

package bboltstore

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mapped collects the pages of bbolt's memory map that a long read (a
// backup's copy) has touched, to give them back with release: the map is
// of the file, read-only and shared, so dropping the pages from this
// process only makes the next read of them fault them in again from the
// page cache. Without it a copy of a 300 MB file left 300 MB more in
// hookbox's resident set (TestOps_SlowBackupReader).
type mapped struct {
	lo, hi uintptr // the map's pages in use (set by the caller): nothing else is touched
	spans  []span
}

// span is a run of whole pages of the map.
type span struct {
	at unsafe.Pointer
	n  int
}

var pageSize = os.Getpagesize()

// setMap says where bbolt's map is: data is its first byte (bolt.Info's
// Data), size the bytes in use (the read transaction's Size).
func (m *mapped) setMap(data uintptr, size int64) {
	m.lo, m.hi = data, data+uintptr(size)
}

// touch notes the pages b lies in, when b is in bbolt's map.
func (m *mapped) touch(b []byte) {
	if len(b) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	if uintptr(p) < m.lo || uintptr(p)+uintptr(len(b)) > m.hi {
		return // not in the map: bbolt copies a small bucket stored unaligned in its parent
	}
	off := int(uintptr(p) % uintptr(pageSize))
	at := unsafe.Add(p, -off)
	n := (off + len(b) + pageSize - 1) / pageSize * pageSize
	if k := len(m.spans); k > 0 {
		last := &m.spans[k-1]
		end := unsafe.Add(last.at, last.n)
		if uintptr(at) >= uintptr(last.at) && uintptr(at) <= uintptr(end) { // within or right after the last
			if grow := int(uintptr(unsafe.Add(at, n)) - uintptr(end)); grow > 0 {
				last.n += grow
			}
			return
		}
	}
	m.spans = append(m.spans, span{at, n})
}

// release gives the pages noted since the last release back.
func (m *mapped) release() {
	for _, s := range m.spans {
		unix.Madvise(unsafe.Slice((*byte)(s.at), s.n), unix.MADV_DONTNEED)
	}
	m.spans = m.spans[:0]
}
