package datadir

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openUnnamed makes a file without a name in the directory dirfd
// (O_TMPFILE): nobody can swap a name it does not have.
func openUnnamed(dirfd int, perm os.FileMode) (int, error) {
	return unix.Openat(dirfd, ".", unix.O_TMPFILE|unix.O_RDWR|unix.O_CLOEXEC, uint32(perm.Perm()))
}

// linkUnnamed gives the unnamed file fd the name name in dirfd: by its
// descriptor where the caller may (root), else through /proc.
func linkUnnamed(fd, dirfd int, name string) error {
	err := unix.Linkat(fd, "", dirfd, name, unix.AT_EMPTY_PATH)
	if err == nil || errors.Is(err, unix.EEXIST) {
		return err
	}
	return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), dirfd, name, unix.AT_SYMLINK_FOLLOW)
}
