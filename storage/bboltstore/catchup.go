// A compaction's catch-up (compact.go): the copy holds the live data of one
// read transaction, prev; a catch-up round makes it hold a later one's,
// next, reading only the pages that differ.
//
// Why that is enough: bbolt is copy-on-write. A write never changes a page
// in place: it writes the changed leaf and every branch above it to pages
// that were free, and a page stays unfree while a read transaction that
// can reach it is open. prev is open through the round, so a page id that
// both prev and next reach holds the same bytes in both, and so does its
// whole subtree. The tracker knows every page prev's buckets reach (their
// ids, and each branch's children). Walking a bucket of next from its
// root, a page prev reaches is a shared subtree, not read further; every
// other page is new, read. Walking the same bucket of prev, stopping at
// those shared pages, finds the pages next no longer reaches. A key of a
// new leaf is put with its value; a key of a gone leaf that next does not
// hold is deleted. Every other key lies in a shared leaf, the same in
// both. A bucket stored inline in its parent (small), a nested one, or one
// that became or stopped being inline, is compared key by key.

package bboltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unsafe"

	bolt "go.etcd.io/bbolt"
)

// bbolt's page layout (go.etcd.io/bbolt/internal/common/page.go): a
// header of id(8) flags(2) count(2) overflow(4), then count elements;
// a branch element is pos(4) ksize(4) pgid(8), a leaf element flags(4)
// pos(4) ksize(4) vsize(4), pos counted from the element itself.
const (
	pageHeader = 16
	elemSize   = 16
	branchPage = 0x01
	leafPage   = 0x02
	bucketLeaf = 0x01 // a leaf element that is a nested bucket
)

// tracker knows the pages the copy's snapshot reaches (see above).
type tracker struct {
	reach []uint64            // bit per page id: reached by the snapshot's buckets
	kids  map[uint64][]uint64 // the snapshot's branch pages: their children

	// One round's findings, settled into the above once it committed.
	shared    map[uint64]bool     // pages of next that prev reaches: subtrees not read
	added     []uint64            // pages next reaches and prev does not
	removed   []uint64            // pages prev reaches and next does not
	newKids   map[uint64][]uint64 // added branch pages' children
	collect   bool                // keep the leaves below
	newLeaves [][]byte
	oldLeaves [][]byte
	touched   mapped // pages of the map read, given back (release_unix.go)
}

func newTracker() *tracker {
	return &tracker{kids: map[uint64][]uint64{}, shared: map[uint64]bool{}, newKids: map[uint64][]uint64{}}
}

// snapshot is a read transaction's view of bbolt's memory map.
type snapshot struct {
	base  unsafe.Pointer
	psize uint64
	pages uint64 // the file's pages as of the transaction
}

func mapOf(tx *bolt.Tx) snapshot {
	info := tx.DB().Info()
	data := info.Data // the map's first byte, kept by bbolt for the transaction's life
	return snapshot{base: *(*unsafe.Pointer)(unsafe.Pointer(&data)), psize: uint64(info.PageSize), pages: uint64(tx.Size()) / uint64(info.PageSize)}
}

// page returns page id with its overflow, in place.
func (s snapshot) page(id uint64) ([]byte, error) {
	if id < 2 || id >= s.pages {
		return nil, fmt.Errorf("page %d out of the file's %d", id, s.pages)
	}
	hdr := unsafe.Slice((*byte)(unsafe.Add(s.base, id*s.psize)), pageHeader)
	over := uint64(binary.NativeEndian.Uint32(hdr[12:]))
	if binary.NativeEndian.Uint64(hdr) != id || id+1+over > s.pages {
		return nil, fmt.Errorf("page %d unsound", id)
	}
	return unsafe.Slice((*byte)(unsafe.Add(s.base, id*s.psize)), (1+over)*s.psize), nil
}

func (t *tracker) has(id uint64) bool {
	return id/64 < uint64(len(t.reach)) && t.reach[id/64]&(1<<(id%64)) != 0
}

func (t *tracker) set(id uint64, on bool) {
	for id/64 >= uint64(len(t.reach)) {
		t.reach = append(t.reach, 0)
	}
	if on {
		t.reach[id/64] |= 1 << (id % 64)
	} else {
		t.reach[id/64] &^= 1 << (id % 64)
	}
}

// build learns the pages tx's buckets reach.
func (t *tracker) build(tx *bolt.Tx) error {
	s := mapOf(tx)
	t.touched.setMap(tx.DB().Info().Data, tx.Size())
	err := tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
		if b.Root() == 0 {
			return nil
		}
		return t.walkNew(s, uint64(b.Root()))
	})
	t.settle()
	return err
}

// walkNew walks next's tree below id, stopping at pages prev reaches.
func (t *tracker) walkNew(s snapshot, id uint64) error {
	if t.has(id) {
		t.shared[id] = true
		return nil
	}
	p, err := s.page(id)
	if err != nil {
		return err
	}
	t.touch(p[:pageHeader])
	t.added = append(t.added, id)
	switch binary.NativeEndian.Uint16(p[8:]) {
	case branchPage:
		n := int(binary.NativeEndian.Uint16(p[10:]))
		if pageHeader+n*elemSize > len(p) {
			return fmt.Errorf("page %d unsound", id)
		}
		kids := make([]uint64, n)
		for i := range kids {
			kids[i] = binary.NativeEndian.Uint64(p[pageHeader+i*elemSize+8:])
		}
		t.newKids[id] = kids
		for _, k := range kids {
			if err := t.walkNew(s, k); err != nil {
				return err
			}
		}
	case leafPage:
		if t.collect {
			t.newLeaves = append(t.newLeaves, p)
		}
	default:
		return fmt.Errorf("page %d is neither branch nor leaf", id)
	}
	return nil
}

// walkOld walks prev's tree below id, stopping at the pages next shares.
func (t *tracker) walkOld(s snapshot, id uint64) error {
	if t.shared[id] {
		return nil
	}
	t.removed = append(t.removed, id)
	if kids, ok := t.kids[id]; ok {
		for _, k := range kids {
			if err := t.walkOld(s, k); err != nil {
				return err
			}
		}
		return nil
	}
	if !t.collect {
		return nil
	}
	p, err := s.page(id)
	if err != nil {
		return err
	}
	t.touch(p)
	t.oldLeaves = append(t.oldLeaves, p)
	return nil
}

func (t *tracker) touch(p []byte) {
	t.touched.touch(p)
	if len(t.touched.spans) > 4096 {
		t.touched.release()
	}
}

// settle makes the round's findings the tracker's knowledge: it now knows
// next's pages.
func (t *tracker) settle() {
	for _, id := range t.removed {
		t.set(id, false)
		delete(t.kids, id)
	}
	for _, id := range t.added {
		t.set(id, true)
		if k, ok := t.newKids[id]; ok {
			t.kids[id] = k
		}
	}
	t.added, t.removed = t.added[:0], t.removed[:0]
	clear(t.shared)
	clear(t.newKids)
	t.newLeaves, t.oldLeaves = t.newLeaves[:0], t.oldLeaves[:0]
}

// catchUp makes dst, which holds what prev holds, hold what next holds,
// in one transaction of dst, and reports how many pages it found changed.
func (t *tracker) catchUp(prev, next *bolt.Tx, dst *bolt.DB) (int, error) {
	sa, sb := mapOf(prev), mapOf(next)
	t.touched.setMap(next.DB().Info().Data, max(prev.Size(), next.Size()))
	defer t.touched.release()
	dtx, err := dst.Begin(true)
	if err != nil {
		return 0, err
	}
	defer func() {
		if dtx != nil {
			dtx.Rollback()
		}
	}()
	changed := 0
	err = next.ForEach(func(name []byte, b *bolt.Bucket) error {
		a := prev.Bucket(name)
		db := dtx.Bucket(name)
		if (a == nil) != (db == nil) {
			return fmt.Errorf("bucket %q: the copy is not the snapshot's", name)
		}
		if db == nil {
			var err error
			if db, err = dtx.CreateBucket(name); err != nil {
				return err
			}
		}
		n, err := t.bucket(sa, sb, a, b, db)
		changed += n
		return err
	})
	if err == nil {
		err = prev.ForEach(func(name []byte, a *bolt.Bucket) error {
			if next.Bucket(name) != nil {
				return nil
			}
			changed++
			if a.Root() != 0 {
				if err := t.walkOld(sa, uint64(a.Root())); err != nil {
					return err
				}
			}
			return dtx.DeleteBucket(name)
		})
	}
	if err != nil {
		return 0, err
	}
	err = dtx.Commit()
	dtx = nil
	if err != nil {
		return 0, err
	}
	t.settle()
	return changed, nil
}

// bucket makes dst, which holds what a holds (nil: nothing), hold what b
// holds, and reports the pages changed.
func (t *tracker) bucket(sa, sb snapshot, a, b, dst *bolt.Bucket) (int, error) {
	if dst.Sequence() != b.Sequence() {
		if err := dst.SetSequence(b.Sequence()); err != nil {
			return 0, err
		}
	}
	var ra, rb uint64
	if a != nil {
		ra = uint64(a.Root())
	}
	rb = uint64(b.Root())
	if ra != 0 && ra == rb {
		return 0, nil
	}
	before := len(t.added) + len(t.removed)
	t.collect = ra != 0 && rb != 0
	t.newLeaves, t.oldLeaves = t.newLeaves[:0], t.oldLeaves[:0]
	if rb != 0 {
		if err := t.walkNew(sb, rb); err != nil {
			return 0, err
		}
	}
	if ra != 0 {
		if err := t.walkOld(sa, ra); err != nil {
			return 0, err
		}
	}
	changed := len(t.added) + len(t.removed) - before + 1
	if !t.collect {
		return changed, full(a, b, dst)
	}
	for _, p := range t.oldLeaves {
		err := eachLeaf(p, func(_ uint32, k, _ []byte) error {
			if has(b, k) {
				return nil
			}
			return del(dst, k)
		})
		if err != nil {
			return 0, err
		}
	}
	for _, p := range t.newLeaves {
		err := eachLeaf(p, func(flags uint32, k, v []byte) error {
			return put(a, b, dst, k, v, flags&bucketLeaf != 0)
		})
		if err != nil {
			return 0, err
		}
	}
	return changed, nil
}

// eachLeaf calls fn with each element of leaf page p.
func eachLeaf(p []byte, fn func(flags uint32, k, v []byte) error) error {
	n := int(binary.NativeEndian.Uint16(p[10:]))
	if pageHeader+n*elemSize > len(p) {
		return fmt.Errorf("leaf page unsound")
	}
	for i := range n {
		at := pageHeader + i*elemSize
		e := p[at:]
		flags := binary.NativeEndian.Uint32(e)
		pos := int(binary.NativeEndian.Uint32(e[4:]))
		ks := int(binary.NativeEndian.Uint32(e[8:]))
		vs := int(binary.NativeEndian.Uint32(e[12:]))
		k0, v0, end := at+pos, at+pos+ks, at+pos+ks+vs
		if pos < 0 || ks < 0 || vs < 0 || end > len(p) || end < k0 {
			return fmt.Errorf("leaf page unsound")
		}
		if err := fn(flags, p[k0:v0:v0], p[v0:end:end]); err != nil {
			return err
		}
	}
	return nil
}

// full makes dst, which holds what a holds (nil: nothing), hold what b
// holds, key by key.
func full(a, b, dst *bolt.Bucket) error {
	if dst.Sequence() != b.Sequence() {
		if err := dst.SetSequence(b.Sequence()); err != nil {
			return err
		}
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if err := put(a, b, dst, k, v, v == nil); err != nil {
			return err
		}
	}
	if a == nil {
		return nil
	}
	c = a.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if !has(b, k) {
			if err := del(dst, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// put sets k in dst as b holds it: value v, or (nested) the bucket k of b.
func put(a, b, dst *bolt.Bucket, k, v []byte, nested bool) error {
	dk, dv := dst.Cursor().Seek(k)
	held := dk != nil && bytes.Equal(dk, k)
	if !nested {
		if held && dv == nil {
			if err := dst.DeleteBucket(k); err != nil {
				return err
			}
		}
		return dst.Put(k, v)
	}
	var ca *bolt.Bucket
	child := dst.Bucket(k)
	if held && dv != nil {
		if err := dst.Delete(k); err != nil {
			return err
		}
	}
	if child == nil {
		var err error
		if child, err = dst.CreateBucket(k); err != nil {
			return err
		}
	} else if a != nil {
		ca = a.Bucket(k)
	}
	return full(ca, b.Bucket(k), child)
}

// has reports whether b holds key k, a value or a bucket.
func has(b *bolt.Bucket, k []byte) bool {
	got, _ := b.Cursor().Seek(k)
	return got != nil && bytes.Equal(got, k)
}

// del deletes key k from dst, a value or a bucket.
func del(dst *bolt.Bucket, k []byte) error {
	got, v := dst.Cursor().Seek(k)
	switch {
	case got == nil || !bytes.Equal(got, k):
		return nil
	case v == nil:
		return dst.DeleteBucket(k)
	}
	return dst.Delete(k)
}
