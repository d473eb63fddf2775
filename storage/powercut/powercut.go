// Package powercut is a test tool, never part of hookbox: a FUSE file system
// that forgets, at a simulated power cut, whatever a program did not make
// durable. It shows that "acknowledged" survives a pulled plug, which a kill
// -9 cannot: after a kill the kernel still writes out every page it was
// handed, fsync or not.
//
// It serves the files of a backing directory, which plays the disk. Reads
// and writes go to a page cache in memory; fsync or fdatasync of a file
// writes its pages, size, mode and owner to the disk; fsync of a directory
// writes its entries (create, link, unlink, rename), as on ext4 without a
// journal to lean on. Cut is the power cut: what was not synced is lost, all
// of it, or, with Options.Torn, all but a random subset (4 KiB pages of each
// file, a prefix of each directory's changes) that the disk happened to write
// on its own, as a disk that reorders and tears writes leaves it. Mount the
// backing directory again to see what survived.
//
// It needs /dev/fuse and root (see Available); it mounts with mount(2)
// directly, no fusermount. Programs may mmap its files for reading (bbolt
// does): the kernel's page cache sees every write, synced or not. A process
// must not mmap a file of a mount served by the same process (a page fault
// there can deadlock the Go runtime); run such programs in a child process.
package powercut

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Options set how the file system loses data.
type Options struct {
	// Torn makes a cut keep a random subset of the unsynced writes: each
	// dirty page of each file, the file's size and its mode and owner, each
	// with even odds, and a random prefix of each directory's unsynced
	// changes. Without it a cut loses them all.
	Torn bool
	// Seed seeds the random choices of Torn.
	Seed uint64
	// SyncLatency is how long each fsync takes, as a disk's flush does; it
	// widens the window between a write and its durability.
	SyncLatency time.Duration
	// CutWhen, when set, is asked before every operation that changes
	// something (Op); when it answers true the power goes out at that
	// operation: it and every operation after it fail with EIO and change
	// nothing. Frozen then reports it. It runs with the file system locked:
	// it must not use the mount.
	CutWhen func(Op) bool
}

// Op describes an operation that changes something, for Options.CutWhen.
type Op struct {
	// Kind is "write", "truncate", "setattr", "create", "mkdir", "link",
	// "unlink", "rmdir", "rename", "fsync" or "fsyncdir".
	Kind string
	// Path is the file's path relative to the mount (for a rename, the
	// source; for create, link, unlink and the like, the entry's).
	Path string
	// Off and Len are a write's range.
	Off, Len int64
}

// FS is a mounted power-cut file system.
type FS struct {
	backing, mountpoint string
	opts                Options
	server              *fuse.Server

	mu      sync.Mutex
	rng     *rand.Rand
	root    *inode
	inodes  map[uint64]*inode
	nextIno uint64
	frozen  bool
	frozeAt chan struct{} // closed when the power goes out
	err     error         // the first failure to write the backing directory
}

// Available reports why the file system cannot be mounted here, or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("mounting with mount(2) needs root")
	}
	f, err := os.OpenFile("/dev/fuse", os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("no FUSE: %w", err)
	}
	return f.Close()
}

// Require skips tb when the file system cannot be mounted here, and fails
// it instead under CI=true, where the power-loss tests must run.
func Require(tb testing.TB) {
	tb.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("the power-cut file system must run in CI, but: %v", err)
		}
		tb.Skipf("the power-cut file system cannot run here: %v", err)
	}
}

// Mount serves backing at mountpoint, which must be an empty directory.
func Mount(mountpoint, backing string, opts Options) (*FS, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	f := &FS{
		backing:    backing,
		mountpoint: mountpoint,
		opts:       opts,
		rng:        rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		inodes:     map[uint64]*inode{},
		nextIno:    1,
		frozeAt:    make(chan struct{}),
	}
	fi, err := os.Stat(backing)
	if err != nil {
		return nil, err
	}
	f.root = f.newInode(true, fileMode(fi), statOwner(fi))
	if err := f.load(backing, f.root, map[[2]uint64]*inode{}); err != nil {
		return nil, fmt.Errorf("load %s: %w", backing, err)
	}
	second := time.Second
	f.server, err = fs.Mount(mountpoint, &node{fsys: f, in: f.root}, &fs.Options{
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			FsName:            "powercut",
			Name:              "powercut",
			DisableXAttrs:     true,
			// Every change goes through this kernel, so its page cache is
			// never stale. Left to invalidate it when a file's mtime moves
			// (after every write), the kernel drops pages under a reader's
			// mmap and refills them while writes are in flight: bbolt then
			// read a page of zeros where it had written one.
			ExplicitDataCacheControl: true,
		},
		EntryTimeout:   &second,
		AttrTimeout:    &second,
		RootStableAttr: &fs.StableAttr{Ino: f.root.ino},
	})
	if err != nil {
		return nil, fmt.Errorf("mount %s: %w", mountpoint, err)
	}
	return f, nil
}

func (f *FS) newInode(dir bool, mode uint32, owner [2]uint32) *inode {
	n := newInode(f.nextIno, dir, mode, owner[0], owner[1])
	f.inodes[n.ino] = n
	f.nextIno++
	return n
}

// load reads the directory at path into d, as both what the system sees
// and what is on the disk. Names of one backing file share an inode.
func (f *FS) load(path string, d *inode, seen map[[2]uint64]*inode) error {
	ents, err := os.ReadDir(path)
	if err != nil {
		return err
	}
	for _, e := range ents {
		p := filepath.Join(path, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		id := [2]uint64{st.Dev, st.Ino}
		n := seen[id]
		switch {
		case n != nil:
		case fi.IsDir():
			n = f.newInode(true, fileMode(fi), statOwner(fi))
			if err := f.load(p, n, seen); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			n = f.newInode(false, fileMode(fi), statOwner(fi))
			if err := loadFile(p, n); err != nil {
				return err
			}
			seen[id] = n
		default:
			return fmt.Errorf("%s: only files and directories are supported", p)
		}
		d.entries[e.Name()], d.disk.entries[e.Name()] = n, n
		n.links = append(n.links, link{d, e.Name()})
		n.nlink++
		n.parent, n.name = d, e.Name()
	}
	return nil
}

// loadFile reads the file at path into n; pages of zeros stay holes.
func loadFile(path string, n *inode) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var zeros page
	for off := 0; off < len(data); off += pageSize {
		chunk := data[off:min(off+pageSize, len(data))]
		if string(chunk) == string(zeros[:len(chunk)]) {
			continue
		}
		p := new(page)
		copy(p[:], chunk)
		n.pages[int64(off/pageSize)], n.disk.pages[int64(off/pageSize)] = p, p
	}
	n.size, n.disk.size = int64(len(data)), int64(len(data))
	return nil
}

func fileMode(fi os.FileInfo) uint32 { return fi.Sys().(*syscall.Stat_t).Mode & 0o7777 }

func statOwner(fi os.FileInfo) [2]uint32 {
	st := fi.Sys().(*syscall.Stat_t)
	return [2]uint32{st.Uid, st.Gid}
}

// Freeze cuts the power without unmounting yet: every operation from now
// on fails with EIO and changes nothing, an fsync in flight included. Kill
// the programs that use the mount, then Cut decides what the disk kept.
func (f *FS) Freeze() {
	f.mu.Lock()
	f.freeze()
	f.mu.Unlock()
}

// Frozen is closed when the power went out (Freeze, CutWhen or Cut).
func (f *FS) Frozen() <-chan struct{} { return f.frozeAt }

// freeze makes every later operation fail. Call with f.mu held.
func (f *FS) freeze() {
	if !f.frozen {
		f.frozen = true
		close(f.frozeAt)
	}
}

// CutReport says what a cut did with the writes that were not synced.
type CutReport struct {
	DirtyPages, KeptPages int // file pages written since their last sync, and those the disk kept (Torn)
	DirOps, KeptDirOps    int // directory changes since their directory's last sync, and those kept
}

func (r CutReport) String() string {
	return fmt.Sprintf("unsynced pages %d (kept %d), unsynced directory changes %d (kept %d)",
		r.DirtyPages, r.KeptPages, r.DirOps, r.KeptDirOps)
}

// Cut cuts the power (if Freeze or CutWhen did not already): every
// operation from now on fails, the writes that were not synced are lost
// (with Torn, all but a random subset), and the file system is unmounted.
// The backing directory then holds what survived. Kill the programs that
// use the mount first, or they keep it busy and it is unmounted lazily.
func (f *FS) Cut() (CutReport, error) {
	f.mu.Lock()
	f.freeze()
	var r CutReport
	var errs []error
	for _, n := range f.sorted() {
		if n.dir {
			r.DirOps += len(n.pending)
		} else {
			r.DirtyPages += len(n.dirty)
		}
	}
	if f.opts.Torn {
		keep := func() bool { return f.rng.IntN(2) == 0 }
		for _, n := range f.sorted() {
			if !n.dir {
				before := len(n.dirty)
				errs = append(errs, f.syncFile(n, keep))
				r.KeptPages += before - len(n.dirty)
			}
		}
		for _, n := range f.sorted() {
			if n.dir && len(n.pending) > 0 {
				k := f.rng.IntN(len(n.pending) + 1)
				r.KeptDirOps += k
				errs = append(errs, f.syncDir(n, k))
			}
		}
	}
	errs = append(errs, f.err)
	f.mu.Unlock()
	return r, errors.Join(append(errs, f.unmount())...)
}

// Unmount syncs everything, as a clean shutdown does, and unmounts.
func (f *FS) Unmount() error {
	f.mu.Lock()
	var errs []error
	if !f.frozen {
		for _, n := range f.sorted() {
			errs = append(errs, f.syncFile(n, nil))
		}
		for _, n := range f.sorted() {
			if n.dir {
				errs = append(errs, f.syncDir(n, len(n.pending)))
			}
		}
		f.freeze()
	}
	errs = append(errs, f.err)
	f.mu.Unlock()
	return errors.Join(append(errs, f.unmount())...)
}

// sorted returns the inodes in the order they were made, so that a seed
// gives the same cut.
func (f *FS) sorted() []*inode {
	ns := make([]*inode, 0, len(f.inodes))
	for _, n := range f.inodes {
		ns = append(ns, n)
	}
	slices.SortFunc(ns, func(a, b *inode) int { return int(a.ino) - int(b.ino) })
	return ns
}

// unmount unmounts, lazily when a process still holds a file open.
func (f *FS) unmount() error {
	if err := f.server.Unmount(); err == nil {
		return nil
	}
	if err := syscall.Unmount(f.mountpoint, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", f.mountpoint, err)
	}
	return nil
}
