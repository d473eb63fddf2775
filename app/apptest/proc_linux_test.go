package apptest_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"hookbox/app/apptest"
)

// MappedRSS counts the pages of a file this process has mapped and read:
// the memory tests that use it pass on 0, so it must not read 0 where
// there are pages.
func TestMappedRSS(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data")
	const size = 1 << 20
	if err := os.WriteFile(path, make([]byte, size), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(m)
	var sum byte
	for i := 0; i < size; i += os.Getpagesize() {
		sum += m[i]
	}
	n, err := apptest.MappedRSS("/proc/self/smaps", path)
	if err != nil || n < size {
		t.Fatalf("MappedRSS = %d, %v; want the %d bytes read (sum %d)", n, err, size, sum)
	}
	if n, err := apptest.MappedRSS("/proc/self/smaps", path+"-none"); err != nil || n != 0 {
		t.Fatalf("MappedRSS of a file not mapped = %d, %v; want 0", n, err)
	}
}
