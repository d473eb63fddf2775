package powercut

import (
	"context"
	"slices"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is the FUSE face of an inode. Files are opened without a handle of
// their own and without direct I/O: reads go through the kernel's page
// cache, which every write reaches, so a read-only mmap sees unsynced
// writes as it would on a disk file system. An open keeps the cache (it
// is never stale: see Mount).
type node struct {
	fs.Inode
	fsys *FS
	in   *inode
}

var (
	_ fs.NodeLookuper  = (*node)(nil)
	_ fs.NodeGetattrer = (*node)(nil)
	_ fs.NodeSetattrer = (*node)(nil)
	_ fs.NodeReaddirer = (*node)(nil)
	_ fs.NodeCreater   = (*node)(nil)
	_ fs.NodeMkdirer   = (*node)(nil)
	_ fs.NodeLinker    = (*node)(nil)
	_ fs.NodeUnlinker  = (*node)(nil)
	_ fs.NodeRmdirer   = (*node)(nil)
	_ fs.NodeRenamer   = (*node)(nil)
	_ fs.NodeOpener    = (*node)(nil)
	_ fs.NodeReader    = (*node)(nil)
	_ fs.NodeWriter    = (*node)(nil)
	_ fs.NodeFsyncer   = (*node)(nil)
	_ fs.NodeFlusher   = (*node)(nil)
	_ fs.NodeStatfser  = (*node)(nil)
)

// lock locks the file system for an operation; op, when not nil, describes
// an operation that changes something, which CutWhen may turn into the
// cut. It fails with EIO once the power is out.
func (n *node) lock(op func() Op) syscall.Errno {
	f := n.fsys
	f.mu.Lock()
	if !f.frozen && op != nil && f.opts.CutWhen != nil && f.opts.CutWhen(op()) {
		f.freeze()
	}
	if f.frozen {
		f.mu.Unlock()
		return syscall.EIO
	}
	return 0
}

func (n *node) unlock() { n.fsys.mu.Unlock() }

// child returns the FUSE inode of c, looked up under n.
func (n *node) child(ctx context.Context, c *inode, out *fuse.EntryOut) *fs.Inode {
	fillAttr(c, &out.Attr)
	mode := uint32(syscall.S_IFREG)
	if c.dir {
		mode = syscall.S_IFDIR
	}
	return n.NewInode(ctx, &node{fsys: n.fsys, in: c}, fs.StableAttr{Mode: mode, Ino: c.ino})
}

func fillAttr(in *inode, a *fuse.Attr) {
	a.Ino = in.ino
	a.Uid, a.Gid = in.uid, in.gid
	a.Blksize = pageSize
	if in.dir {
		a.Mode = syscall.S_IFDIR | in.mode
		a.Nlink = 2
	} else {
		a.Mode = syscall.S_IFREG | in.mode
		a.Nlink = uint32(max(in.nlink, 0))
		a.Size = uint64(in.size)
		a.Blocks = uint64(len(in.pages)) * pageSize / 512
	}
	a.SetTimes(nil, &in.mtime, &in.mtime)
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.lock(nil); e != 0 {
		return nil, e
	}
	defer n.unlock()
	c := n.in.entries[name]
	if c == nil {
		return nil, syscall.ENOENT
	}
	return n.child(ctx, c, out), 0
}

func (n *node) Getattr(_ context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	if e := n.lock(nil); e != 0 {
		return e
	}
	defer n.unlock()
	fillAttr(n.in, &out.Attr)
	return 0
}

func (n *node) Setattr(_ context.Context, _ fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	size, resize := in.GetSize()
	kind := "setattr"
	if resize {
		kind = "truncate"
	}
	if e := n.lock(func() Op { return Op{Kind: kind, Path: n.in.path(), Off: int64(size)} }); e != 0 {
		return e
	}
	defer n.unlock()
	if resize {
		if n.in.dir {
			return syscall.EISDIR
		}
		n.in.truncate(int64(size))
	}
	if mode, ok := in.GetMode(); ok {
		n.in.mode, n.in.attrDirty = mode&0o7777, true
	}
	if uid, ok := in.GetUID(); ok {
		n.in.uid, n.in.attrDirty = uid, true
	}
	if gid, ok := in.GetGID(); ok {
		n.in.gid, n.in.attrDirty = gid, true
	}
	if mtime, ok := in.GetMTime(); ok {
		n.in.mtime = mtime
	}
	fillAttr(n.in, &out.Attr)
	return 0
}

func (n *node) Readdir(context.Context) (fs.DirStream, syscall.Errno) {
	if e := n.lock(nil); e != 0 {
		return nil, e
	}
	defer n.unlock()
	ents := make([]fuse.DirEntry, 0, len(n.in.entries))
	for name, c := range n.in.entries {
		mode := uint32(syscall.S_IFREG)
		if c.dir {
			mode = syscall.S_IFDIR
		}
		ents = append(ents, fuse.DirEntry{Name: name, Mode: mode, Ino: c.ino})
	}
	slices.SortFunc(ents, func(a, b fuse.DirEntry) int { return cmpString(a.Name, b.Name) })
	return fs.NewListDirStream(ents), 0
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// add makes a new inode under name, for Create and Mkdir.
func (n *node) add(ctx context.Context, kind, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.lock(func() Op { return Op{Kind: kind, Path: joinPath(n.in, name)} }); e != 0 {
		return nil, e
	}
	defer n.unlock()
	if n.in.entries[name] != nil {
		return nil, syscall.EEXIST
	}
	var owner [2]uint32
	if c, ok := fuse.FromContext(ctx); ok {
		owner = [2]uint32{c.Uid, c.Gid}
	}
	c := n.fsys.newInode(kind == "mkdir", mode, owner)
	c.attrDirty = true
	n.in.change(change{name, c})
	return n.child(ctx, c, out), 0
}

func joinPath(dir *inode, name string) string {
	if p := dir.path(); p != "" {
		return p + "/" + name
	}
	return name
}

func (n *node) Create(ctx context.Context, name string, _, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	c, e := n.add(ctx, "create", name, mode, out)
	return c, nil, fuse.FOPEN_KEEP_CACHE, e
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	return n.add(ctx, "mkdir", name, mode, out)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	t, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	if e := n.lock(func() Op { return Op{Kind: "link", Path: joinPath(n.in, name)} }); e != 0 {
		return nil, e
	}
	defer n.unlock()
	switch {
	case t.in.dir:
		return nil, syscall.EPERM
	case n.in.entries[name] != nil:
		return nil, syscall.EEXIST
	}
	n.in.change(change{name, t.in})
	return n.child(ctx, t.in, out), 0
}

// remove removes name, a file (Unlink) or an empty directory (Rmdir).
func (n *node) remove(kind, name string) syscall.Errno {
	if e := n.lock(func() Op { return Op{Kind: kind, Path: joinPath(n.in, name)} }); e != 0 {
		return e
	}
	defer n.unlock()
	c := n.in.entries[name]
	switch {
	case c == nil:
		return syscall.ENOENT
	case kind == "unlink" && c.dir:
		return syscall.EISDIR
	case kind == "rmdir" && !c.dir:
		return syscall.ENOTDIR
	case len(c.entries) > 0:
		return syscall.ENOTEMPTY
	}
	n.in.change(change{name, nil})
	return 0
}

func (n *node) Unlink(_ context.Context, name string) syscall.Errno { return n.remove("unlink", name) }

func (n *node) Rmdir(_ context.Context, name string) syscall.Errno { return n.remove("rmdir", name) }

// Linux's renameat2 flags.
const (
	renameNoReplace = 1
	renameExchange  = 2
)

func (n *node) Rename(_ context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if e := n.lock(func() Op { return Op{Kind: "rename", Path: joinPath(n.in, name)} }); e != 0 {
		return e
	}
	defer n.unlock()
	from, to := n.in, np.in
	c, old := from.entries[name], to.entries[newName]
	switch {
	case c == nil:
		return syscall.ENOENT
	case flags&renameExchange != 0:
		if old == nil {
			return syscall.ENOENT
		}
	case flags&renameNoReplace != 0 && old != nil:
		return syscall.EEXIST
	case old != nil && old.dir && !c.dir:
		return syscall.EISDIR
	case old != nil && !old.dir && c.dir:
		return syscall.ENOTDIR
	case old != nil && old.dir && len(old.entries) > 0:
		return syscall.ENOTEMPTY
	}
	if c == old {
		return 0
	}
	var back *inode // what takes name's place: the other file of an exchange
	if flags&renameExchange != 0 {
		back = old
	}
	if from == to {
		from.change(change{name, back}, change{newName, c})
		return 0
	}
	from.change(change{name, back})
	to.change(change{newName, c})
	return 0
}

func (n *node) Open(_ context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_TRUNC != 0 {
		if e := n.lock(func() Op { return Op{Kind: "truncate", Path: n.in.path()} }); e != 0 {
			return nil, 0, e
		}
		defer n.unlock()
		n.in.truncate(0)
		return nil, fuse.FOPEN_KEEP_CACHE, 0
	}
	if e := n.lock(nil); e != 0 {
		return nil, 0, e
	}
	n.unlock()
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Read(_ context.Context, _ fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if e := n.lock(nil); e != 0 {
		return nil, e
	}
	defer n.unlock()
	return fuse.ReadResultData(dest[:n.in.read(off, dest)]), 0
}

func (n *node) Write(_ context.Context, _ fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if e := n.lock(func() Op { return Op{Kind: "write", Path: n.in.path(), Off: off, Len: int64(len(data))} }); e != 0 {
		return 0, e
	}
	defer n.unlock()
	n.in.write(off, data)
	return uint32(len(data)), 0
}

// Fsync makes a file's contents or a directory's entries durable (fsync
// and fdatasync alike), after the disk's latency.
func (n *node) Fsync(_ context.Context, _ fs.FileHandle, _ uint32) syscall.Errno {
	if d := n.fsys.opts.SyncLatency; d > 0 {
		time.Sleep(d)
	}
	kind := "fsync"
	if n.in.dir {
		kind = "fsyncdir"
	}
	if e := n.lock(func() Op { return Op{Kind: kind, Path: n.in.path()} }); e != 0 {
		return e
	}
	defer n.unlock()
	var err error
	if n.in.dir {
		err = n.fsys.syncDir(n.in, len(n.in.pending))
	} else {
		err = n.fsys.syncFile(n.in, nil)
	}
	if err != nil {
		if n.fsys.err == nil {
			n.fsys.err = err
		}
		return syscall.EIO
	}
	return 0
}

// Flush (close) makes nothing durable.
func (n *node) Flush(context.Context, fs.FileHandle) syscall.Errno { return 0 }

func (n *node) Statfs(_ context.Context, out *fuse.StatfsOut) syscall.Errno {
	const blocks = 1 << 28 // 1 TiB of 4 KiB blocks: room enough for any test
	out.Blocks, out.Bfree, out.Bavail = blocks, blocks, blocks
	out.Files, out.Ffree = 1<<20, 1<<20
	out.Bsize, out.Frsize, out.NameLen = pageSize, pageSize, 255
	return 0
}
