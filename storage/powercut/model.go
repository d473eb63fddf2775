package powercut

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// pageSize is the unit in which the disk keeps or loses unsynced writes.
const pageSize = 4096

type page [pageSize]byte

// An inode is a file or a directory twice: as the system sees it (the
// page cache and the directory cache) and as it is on the disk. Writes
// change the first; fsync copies the first onto the second.
type inode struct {
	ino uint64
	dir bool

	// As the system sees it.
	mode, uid, gid uint32
	mtime          time.Time
	pages          map[int64]*page // file contents; a missing page reads as zeros
	size           int64
	dirty          map[int64]bool // pages written or cut since the last sync
	attrDirty      bool           // mode or owner changed since the last sync
	entries        map[string]*inode
	pending        []dirOp // directory changes since the last sync, in order
	nlink          int     // names it has now
	parent         *inode  // where it was last given a name, for Op paths
	name           string

	// As on the disk. A page is shared with pages until written again, and
	// never changed in place.
	disk struct {
		mode, uid, gid uint32
		pages          map[int64]*page
		size           int64
		entries        map[string]*inode
	}
	links []link // its names on the disk
}

// A link is a name on the disk: an entry of a directory's disk entries.
type link struct {
	dir  *inode
	name string
}

// A dirOp is one directory change, applied at once: a create, an unlink,
// or a rename within the directory (two names). to == nil removes the name.
type dirOp []change

type change struct {
	name string
	to   *inode
}

func newInode(ino uint64, dir bool, mode, uid, gid uint32) *inode {
	n := &inode{ino: ino, dir: dir, mode: mode & 0o7777, uid: uid, gid: gid, mtime: time.Now()}
	n.disk.mode, n.disk.uid, n.disk.gid = n.mode, uid, gid
	if dir {
		n.entries = map[string]*inode{}
		n.disk.entries = map[string]*inode{}
	} else {
		n.pages = map[int64]*page{}
		n.dirty = map[int64]bool{}
		n.disk.pages = map[int64]*page{}
	}
	return n
}

// own returns page i for writing: a copy when it is shared with the disk.
func (n *inode) own(i int64) *page {
	p := n.pages[i]
	if p == nil || p == n.disk.pages[i] {
		c := new(page)
		if p != nil {
			*c = *p
		}
		n.pages[i], p = c, c
	}
	n.dirty[i] = true
	return p
}

func (n *inode) write(off int64, data []byte) {
	for len(data) > 0 {
		p := n.own(off / pageSize)
		c := copy(p[off%pageSize:], data)
		data, off = data[c:], off+int64(c)
	}
	n.size = max(n.size, off)
	n.mtime = time.Now()
}

func (n *inode) read(off int64, dest []byte) int {
	end := min(off+int64(len(dest)), n.size)
	done := 0
	for off < end {
		o := off % pageSize
		c := int(min(pageSize-o, end-off))
		if p := n.pages[off/pageSize]; p != nil {
			copy(dest[done:done+c], p[o:])
		} else {
			clear(dest[done : done+c])
		}
		done, off = done+c, off+int64(c)
	}
	return done
}

// truncate sets the size; what lies past it reads as zeros if the file
// grows again.
func (n *inode) truncate(size int64) {
	if size < n.size {
		for i := range n.pages {
			if i*pageSize >= size {
				delete(n.pages, i)
				n.dirty[i] = true
			}
		}
		if o := size % pageSize; o != 0 && n.pages[size/pageSize] != nil {
			clear(n.own(size / pageSize)[o:])
		}
	}
	n.size = size
	n.mtime = time.Now()
}

// change applies op to the entries the system sees and queues it for the
// disk.
func (n *inode) change(op ...change) {
	for _, c := range op {
		if old := n.entries[c.name]; old != nil {
			old.nlink--
		}
		if c.to == nil {
			delete(n.entries, c.name)
			continue
		}
		n.entries[c.name] = c.to
		c.to.nlink++
		c.to.parent, c.to.name = n, c.name
	}
	n.pending = append(n.pending, op)
	n.mtime = time.Now()
}

// path is where n was last given a name, relative to the mount.
func (n *inode) path() string {
	var parts []string
	for m := n; m.parent != nil && len(parts) < maxDepth; m = m.parent {
		parts = append(parts, m.name)
	}
	slices.Reverse(parts)
	return filepath.Join(parts...)
}

// maxDepth bounds walks up and down the disk's tree: entries synced in
// different orders can make a cycle there that the system never showed.
const maxDepth = 64

// diskPath returns where directory d is on the disk (the backing
// directory), and false when no chain of disk entries reaches it.
func (f *FS) diskPath(d *inode) (string, bool) {
	var parts []string
	for m := d; m != f.root; m = m.links[0].dir {
		if len(m.links) == 0 || len(parts) == maxDepth {
			return "", false
		}
		parts = append(parts, m.links[0].name)
	}
	slices.Reverse(parts)
	return filepath.Join(append([]string{f.backing}, parts...)...), true
}

// syncFile writes n's dirty pages, size and attributes to the disk, or
// (keep not nil) only those for which keep says yes: a torn write.
func (f *FS) syncFile(n *inode, keep func() bool) error {
	if n.dir || len(n.dirty) == 0 && n.size == n.disk.size && !n.attrDirty {
		return nil
	}
	var written []int64
	for i := range n.dirty {
		if keep != nil && !keep() {
			continue
		}
		if p := n.pages[i]; p != nil {
			n.disk.pages[i] = p
		} else {
			delete(n.disk.pages, i)
		}
		delete(n.dirty, i)
		written = append(written, i)
	}
	slices.Sort(written)
	if keep == nil || keep() {
		if n.size < n.disk.size {
			for i := range n.disk.pages {
				if i*pageSize >= n.size {
					delete(n.disk.pages, i)
				}
			}
		}
		n.disk.size = n.size
	}
	attrs := n.attrDirty && (keep == nil || keep())
	if attrs {
		n.disk.mode, n.disk.uid, n.disk.gid = n.mode, n.uid, n.gid
		n.attrDirty = false
	}
	var errs []error
	for _, l := range n.links {
		dp, ok := f.diskPath(l.dir)
		if !ok {
			continue
		}
		errs = append(errs, writeFile(filepath.Join(dp, l.name), n, written, attrs, os.O_WRONLY))
	}
	return errors.Join(errs...)
}

// writeFile writes pages of n's disk contents to path, sets its size and,
// when attrs is set, its mode and owner.
func writeFile(path string, n *inode, pages []int64, attrs bool, flag int) error {
	file, err := os.OpenFile(path, flag, os.FileMode(n.disk.mode))
	if err != nil {
		return err
	}
	var zeros page
	for _, i := range pages {
		if i*pageSize >= n.disk.size {
			continue
		}
		p := n.disk.pages[i]
		if p == nil {
			p = &zeros
		}
		if _, err := file.WriteAt(p[:min(pageSize, n.disk.size-i*pageSize)], i*pageSize); err != nil {
			file.Close()
			return err
		}
	}
	err = file.Truncate(n.disk.size)
	if attrs && err == nil {
		err = errors.Join(file.Chmod(os.FileMode(n.disk.mode)), file.Chown(int(n.disk.uid), int(n.disk.gid)))
	}
	return errors.Join(err, file.Close())
}

// syncDir writes the first k of d's pending changes to the disk.
func (f *FS) syncDir(d *inode, k int) error {
	ops := d.pending[:k]
	d.pending = slices.Clone(d.pending[k:])
	final := map[string]*inode{}
	var names []string
	for _, op := range ops {
		for _, c := range op {
			if _, ok := final[c.name]; !ok {
				names = append(names, c.name)
			}
			final[c.name] = c.to
		}
	}
	dp, onDisk := f.diskPath(d)
	var errs []error
	// Names that go away first: a file that moves is then written anew
	// (or linked to its other name on the disk) at its new name.
	for _, name := range names {
		old := d.disk.entries[name]
		if old == nil || old == final[name] {
			continue
		}
		delete(d.disk.entries, name)
		old.links = slices.DeleteFunc(old.links, func(l link) bool { return l == link{d, name} })
		if onDisk {
			errs = append(errs, os.RemoveAll(filepath.Join(dp, name)))
		}
	}
	for _, name := range names {
		to := final[name]
		if to == nil || d.disk.entries[name] == to {
			continue
		}
		d.disk.entries[name] = to
		if onDisk {
			errs = append(errs, f.materialize(to, filepath.Join(dp, name), 0))
		}
		to.links = append(to.links, link{d, name})
	}
	return errors.Join(errs...)
}

// materialize writes n's disk state at path, which did not exist: a
// directory with its disk entries, or a file (a hard link when it is on
// the disk under another name already).
func (f *FS) materialize(n *inode, path string, depth int) error {
	if depth == maxDepth {
		return fmt.Errorf("%s: directories nested deeper than %d", path, maxDepth)
	}
	if n.dir {
		err := os.Mkdir(path, os.FileMode(n.disk.mode))
		if err == nil {
			err = os.Chown(path, int(n.disk.uid), int(n.disk.gid))
		}
		errs := []error{err}
		for name, c := range n.disk.entries {
			errs = append(errs, f.materialize(c, filepath.Join(path, name), depth+1))
		}
		return errors.Join(errs...)
	}
	for _, l := range n.links {
		if dp, ok := f.diskPath(l.dir); ok && os.Link(filepath.Join(dp, l.name), path) == nil {
			return nil
		}
	}
	pages := make([]int64, 0, len(n.disk.pages))
	for i := range n.disk.pages {
		pages = append(pages, i)
	}
	slices.Sort(pages)
	return writeFile(path, n, pages, true, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
}
