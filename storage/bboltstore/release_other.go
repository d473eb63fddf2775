//go:build !unix

package bboltstore

// mapped does nothing where madvise is not: see release_unix.go.
type mapped struct{}

func (m *mapped) setMap(uintptr, int64) {}

func (m *mapped) touch([]byte) {}

func (m *mapped) release() {}
