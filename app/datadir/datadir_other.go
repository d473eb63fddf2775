//go:build !unix

package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir is a directory; where there are no directory descriptors its names
// are resolved through its path, and files are checked after they open.
type Dir struct{ path string }

// Open opens the directory at path.
func Open(path string) (*Dir, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("not a directory")}
	}
	return &Dir{path: path}, nil
}

// Close closes the directory.
func (d *Dir) Close() error { return nil }

// Path is the directory's path, as given to Open.
func (d *Dir) Path() string { return d.path }

// Owner returns no owner here.
func (d *Dir) Owner() (uid, gid int) { return -1, -1 }

// Sync does nothing where directories cannot be synced.
func (d *Dir) Sync() error { return nil }

// OpenFile opens the regular file name in d with flag.
func (d *Dir) OpenFile(name string, flag int, perm os.FileMode) (*os.File, error) {
	p := filepath.Join(d.path, name)
	if fi, err := os.Lstat(p); err == nil && !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: p, Err: fmt.Errorf("%w: %v", ErrNotRegular, fi.Mode().Type())}
	}
	return os.OpenFile(p, flag, perm)
}

// Remove removes name from d.
func (d *Dir) Remove(name string) error { return os.Remove(filepath.Join(d.path, name)) }

// Link gives name the second name newname in d.
func (d *Dir) Link(name, newname string) error {
	return os.Link(filepath.Join(d.path, name), filepath.Join(d.path, newname))
}

// Exists reports whether name in d holds anything.
func (d *Dir) Exists(name string) (bool, error) {
	_, err := os.Lstat(filepath.Join(d.path, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Holds reports whether name in d is f itself now.
func (d *Dir) Holds(name string, f *os.File) (bool, error) {
	at, err := os.Lstat(filepath.Join(d.path, name))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	held, err := f.Stat()
	if err != nil {
		return false, err
	}
	return os.SameFile(at, held), nil
}

// File is a new file in a Dir that has no final name yet.
type File struct {
	*os.File
	d   *Dir
	tmp string
}

// NewFile makes a file with a temporary name from pattern in d.
func (d *Dir) NewFile(pattern string, perm os.FileMode) (*File, error) {
	f, err := os.CreateTemp(d.path, pattern)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, d: d, tmp: filepath.Base(f.Name())}, nil
}

// Publish renames f to name in its Dir.
func (f *File) Publish(name string) error {
	tmp := f.tmp
	f.tmp = ""
	return os.Rename(filepath.Join(f.d.path, tmp), filepath.Join(f.d.path, name))
}

// Discard closes f and removes its temporary name, if it still has one.
func (f *File) Discard() {
	f.Close()
	if f.tmp != "" {
		os.Remove(filepath.Join(f.d.path, f.tmp))
		f.tmp = ""
	}
}

// OpenFile opens the regular file at path as Dir.OpenFile does.
func OpenFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	d, err := Open(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	return d.OpenFile(filepath.Base(path), flag, perm)
}
