//go:build unix

package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Dir is a directory held open: names in it are resolved against the
// directory itself, which a rename of the path cannot change.
type Dir struct {
	f        *os.File
	fd       int
	path     string
	uid, gid int
}

// Open opens the directory at path, resolving it one name at a time from
// the root: a symbolic link on the way is followed only where the
// directory holding it could have been changed by no one but root and the
// caller (or, in a sticky directory such as /tmp, when the link is theirs).
// A link in a directory another user can change (the service user's data
// or backup directory, when root runs) is refused: it could point anywhere
// by the time it is followed.
func Open(path string) (*Dir, error) {
	fd, err := resolve(path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), fd: fd, path: path, uid: int(st.Uid), gid: int(st.Gid)}, nil
}

// ErrUntrustedLink means a path goes through a symbolic link in a
// directory that another user than root and the caller can change.
var ErrUntrustedLink = errors.New("a symbolic link in a directory another user can change")

const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// resolve opens the directory at path as Open describes.
func resolve(path string) (int, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return -1, err
	}
	cur, err := unix.Open("/", dirFlags, 0)
	if err != nil {
		return -1, err
	}
	rest := strings.Split(abs, "/")
	for links := 0; len(rest) > 0; {
		name := rest[0]
		rest = rest[1:]
		if name == "" || name == "." {
			continue
		}
		next, err := unix.Openat(cur, name, dirFlags, 0)
		if err == nil {
			unix.Close(cur)
			cur = next
			continue
		}
		var link unix.Stat_t
		if serr := unix.Fstatat(cur, name, &link, unix.AT_SYMLINK_NOFOLLOW); serr != nil || link.Mode&unix.S_IFMT != unix.S_IFLNK {
			unix.Close(cur)
			return -1, err
		}
		var dir unix.Stat_t
		if err := unix.Fstat(cur, &dir); err != nil {
			unix.Close(cur)
			return -1, err
		}
		if !trustedLink(&dir, &link) {
			unix.Close(cur)
			return -1, fmt.Errorf("%w: %s is a link in a directory of uid %d (mode %04o): give the path without it", ErrUntrustedLink, name, dir.Uid, dir.Mode&0o7777)
		}
		if links++; links > 40 {
			unix.Close(cur)
			return -1, unix.ELOOP
		}
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(cur, name, buf)
		if err != nil {
			unix.Close(cur)
			return -1, err
		}
		target := string(buf[:n])
		if strings.HasPrefix(target, "/") {
			unix.Close(cur)
			if cur, err = unix.Open("/", dirFlags, 0); err != nil {
				return -1, err
			}
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, nil
}

// trustedLink reports whether a link (link) in a directory (dir) could
// only have been made or changed by root or the caller.
func trustedLink(dir, link *unix.Stat_t) bool {
	me := uint32(os.Geteuid())
	mine := func(uid uint32) bool { return uid == 0 || uid == me }
	if mine(dir.Uid) && dir.Mode&0o022 == 0 {
		return true
	}
	return dir.Mode&unix.S_ISVTX != 0 && mine(link.Uid) // sticky: only its owner replaces it
}

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Path is the directory's path, as given to Open.
func (d *Dir) Path() string { return d.path }

// Owner returns the user and group that own the directory.
func (d *Dir) Owner() (uid, gid int) { return d.uid, d.gid }

// Sync makes the names made, renamed or removed in the directory durable.
func (d *Dir) Sync() error {
	if err := d.f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", d.path, err)
	}
	return nil
}

func (d *Dir) err(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: filepath.Join(d.path, name), Err: err}
}

// OpenFile opens the regular file name in d with flag (os.O_*), never
// through a symbolic link and never waiting on a FIFO: anything but a
// regular file is refused with ErrNotRegular, and a file root would write
// to that is not the directory owner's with ErrOtherOwner. With os.O_CREATE a file this
// call makes is made exclusively, then given perm and, when the caller is
// root, d's owner, through the open file; a file already there keeps its
// owner (one that someone else put there is never handed over).
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	const always = unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	for range 100 {
		if flag&os.O_EXCL == 0 {
			fd, err := unix.Openat(d.fd, name, flag&^(os.O_CREATE|os.O_TRUNC)|always, 0)
			if err == nil {
				return d.existing(fd, name, flag)
			}
			if !errors.Is(err, unix.ENOENT) || flag&os.O_CREATE == 0 {
				return nil, d.openErr(name, err)
			}
		}
		fd, err := unix.Openat(d.fd, name, flag|os.O_CREATE|os.O_EXCL|always, uint32(perm.Perm()))
		if errors.Is(err, unix.EEXIST) && flag&os.O_EXCL == 0 {
			continue // made meanwhile: open that one
		}
		if err != nil {
			return nil, d.openErr(name, err)
		}
		f, err := d.regular(fd, name)
		if err == nil {
			err = d.own(f, perm)
		}
		if err != nil {
			if f != nil {
				f.Close()
			}
			unix.Unlinkat(d.fd, name, 0)
			return nil, err
		}
		return f, nil
	}
	return nil, d.err("open", name, ErrReplaced)
}

// existing wraps fd, a file that was there already, when it is regular
// and, if root opened it to write, belongs to d's owner: a hard link to
// root's own file that the owner put in its directory (where
// fs.protected_hardlinks allows) is not written to, nor truncated.
func (d *Dir) existing(fd int, name string, flag int) (*os.File, error) {
	f, err := d.regular(fd, name)
	if err != nil {
		return nil, err
	}
	if flag&(os.O_WRONLY|os.O_RDWR) != 0 && os.Geteuid() == 0 {
		var st unix.Stat_t
		err := unix.Fstat(fd, &st)
		if err == nil && int(st.Uid) != d.uid {
			err = fmt.Errorf("%w: it belongs to uid %d, the directory to uid %d, and root does not write to it", ErrOtherOwner, st.Uid, d.uid)
		}
		if err != nil {
			f.Close()
			return nil, d.err("open", name, err)
		}
	}
	if flag&os.O_TRUNC != 0 {
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, err
		}
	}
	return f, nil
}

func (d *Dir) openErr(name string, err error) error {
	if errors.Is(err, unix.ELOOP) {
		return d.err("open", name, fmt.Errorf("%w: a symbolic link", ErrNotRegular))
	}
	return d.err("open", name, err)
}

// regular wraps fd when it is a regular file, in blocking mode.
func (d *Dir) regular(fd int, name string) (*os.File, error) {
	var st unix.Stat_t
	err := unix.Fstat(fd, &st)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
		err = fmt.Errorf("%w: %s", ErrNotRegular, kind(uint32(st.Mode)))
	}
	if err == nil {
		err = unix.SetNonblock(fd, false)
	}
	if err != nil {
		unix.Close(fd)
		return nil, d.err("open", name, err)
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), nil
}

func kind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "a FIFO"
	case unix.S_IFLNK:
		return "a symbolic link"
	case unix.S_IFDIR:
		return "a directory"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	case unix.S_IFSOCK:
		return "a socket"
	}
	return "not a file"
}

// own gives f perm (whatever the umask took) and, when the caller is
// root, d's owner: through the open file, so a name swapped meanwhile
// changes nothing.
func (d *Dir) own(f *os.File, perm os.FileMode) error {
	if err := f.Chmod(perm.Perm()); err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if err := f.Chown(d.uid, d.gid); err != nil {
			return err
		}
	}
	return nil
}

// Remove removes name from d (a link itself, never what it points to).
func (d *Dir) Remove(name string) error {
	if err := unix.Unlinkat(d.fd, name, 0); err != nil {
		return d.err("remove", name, err)
	}
	return nil
}

// Link gives what name holds (a link itself, never what it points to) the
// second name newname in d.
func (d *Dir) Link(name, newname string) error {
	if err := unix.Linkat(d.fd, name, d.fd, newname, 0); err != nil {
		return &os.LinkError{Op: "link", Old: filepath.Join(d.path, name), New: filepath.Join(d.path, newname), Err: err}
	}
	return nil
}

// Exists reports whether name in d holds anything (a link included).
func (d *Dir) Exists(name string) (bool, error) {
	var st unix.Stat_t
	err := unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, d.err("stat", name, err)
	}
	return true, nil
}

// Holds reports whether name in d is f itself now (not a link to it).
func (d *Dir) Holds(name string, f *os.File) (bool, error) {
	var at, held unix.Stat_t
	err := unix.Fstatat(d.fd, name, &at, unix.AT_SYMLINK_NOFOLLOW)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		return false, d.err("stat", name, err)
	}
	if err := unix.Fstat(int(f.Fd()), &held); err != nil {
		return false, err
	}
	return at.Dev == held.Dev && at.Ino == held.Ino, nil
}

// File is a new file in a Dir that has no final name there yet: NewFile
// makes it, Publish names it, Discard drops it.
type File struct {
	*os.File
	d *Dir
	// The file is made, as fileName, in a directory of its own (private,
	// privName in d) that belongs to the caller, mode 0700: the owner of d
	// can rename or remove that directory, never touch what is in it.
	private   *os.File
	privName  string
	published bool
}

// fileName is the name of a File in its private directory.
const fileName = "file"

// NewFile makes a file in d for d's owner: mode perm and, when the caller
// is root, d's owner, set through the open file before a byte is written.
// Until Publish it lives in a new directory in d that only the caller may
// change (0700, named from pattern as os.CreateTemp names a file), so that
// nobody can swap its name between its last write and its rename into
// place.
func (d *Dir) NewFile(pattern string, perm os.FileMode) (*File, error) {
	var err error
	for range 10 {
		var f *File
		f, err = d.newFile(pattern, perm)
		if !errors.Is(err, ErrReplaced) {
			return f, err
		}
		// d's owner swapped the private directory between its making and
		// its opening: make another.
	}
	return nil, err
}

func (d *Dir) newFile(pattern string, perm os.FileMode) (*File, error) {
	var privName string
	for range 100 {
		privName = tempName(pattern)
		err := unix.Mkdirat(d.fd, privName, 0o700)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return nil, d.err("mkdir", privName, err)
		}
		break
	}
	pfd, err := unix.Openat(d.fd, privName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ENOENT) {
		return nil, d.err("open", privName, fmt.Errorf("the directory made for a new file was swapped: %w", ErrReplaced))
	}
	if err != nil {
		d.removePrivate(privName, nil)
		return nil, d.err("open", privName, err)
	}
	private := os.NewFile(uintptr(pfd), filepath.Join(d.path, privName))
	var st unix.Stat_t
	err = unix.Fstat(pfd, &st)
	if err == nil && (int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0) {
		err = fmt.Errorf("the directory made for a new file was swapped: %w", ErrReplaced)
	}
	var fd int
	if err == nil {
		fd, err = unix.Openat(pfd, fileName, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
	}
	if err != nil {
		d.removePrivate(privName, private)
		private.Close()
		return nil, d.err("create", pattern, err)
	}
	f := &File{File: os.NewFile(uintptr(fd), filepath.Join(d.path, privName, fileName)), d: d, private: private, privName: privName}
	if err := d.own(f.File, perm); err != nil {
		f.Discard()
		return nil, err
	}
	return f, nil
}

// removePrivate removes the private directory privName from d when it is
// still the one held (private; nil: whatever is under the name, for a
// directory just made), emptied first.
func (d *Dir) removePrivate(privName string, private *os.File) {
	if private != nil {
		unix.Unlinkat(int(private.Fd()), fileName, 0)
		var at, held unix.Stat_t
		if unix.Fstatat(d.fd, privName, &at, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			unix.Fstat(int(private.Fd()), &held) != nil || at.Dev != held.Dev || at.Ino != held.Ino {
			return // moved by d's owner: its business now
		}
	}
	unix.Unlinkat(d.fd, privName, unix.AT_REMOVEDIR)
}

// Publish puts f in place as name in its Dir, replacing what was there, in
// one rename from its private directory (so what lands under name is f,
// whatever anyone does meanwhile), then checks that name holds f: if the
// directory's owner swapped it right after, Publish says so with
// ErrReplaced. A name that is gone by the check was taken away after it
// held f (hookbox passwd's server takes its request so).
func (f *File) Publish(name string) error {
	d := f.d
	if f.published {
		return d.err("rename", name, errors.New("already published"))
	}
	if err := unix.Renameat(int(f.private.Fd()), fileName, d.fd, name); err != nil {
		return &os.LinkError{Op: "rename", Old: f.Name(), New: filepath.Join(d.path, name), Err: err}
	}
	f.published = true
	f.discardPrivate()
	if ok, err := d.Exists(name); err != nil || !ok {
		return err
	}
	ok, err := d.Holds(name, f.File)
	if err != nil {
		return err
	}
	if !ok {
		return d.err("rename", name, ErrReplaced)
	}
	return nil
}

func (f *File) discardPrivate() {
	if f.private != nil {
		f.d.removePrivate(f.privName, f.private)
		f.private.Close()
		f.private = nil
	}
}

// Discard closes f and removes it and its private directory, unless it
// was published; after Publish it only closes f.
func (f *File) Discard() {
	f.Close()
	f.discardPrivate()
}

// OpenFile opens the regular file at path as Dir.OpenFile does: its last
// name is not followed if a link, nor waited on if a FIFO; the directories
// above are the caller's.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	d, err := Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.OpenFile(filepath.Base(path), flag, perm)
}
