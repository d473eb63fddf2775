// Compacted copies (issue 47): a backup holds the live data of the file,
// not its free pages. After the sweep deletes most events the data file
// keeps its size (bbolt never gives pages back); its backup does not.

package bboltstore

import (
	"context"
	"fmt"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// copyTxMax bounds the bytes put in one transaction of the copy: bbolt
// holds a transaction's dirty pages in memory until it commits.
const copyTxMax = 16 << 20

// compactTo writes the live data of one read transaction of the data file
// into a new bbolt file at path (which may exist, empty): every bucket,
// nested ones too, with its keys and its sequence, pages filled full. It
// syncs every copyTxMax bytes and at the end; it stops when ctx is done.
// It returns the copy's size. The copy holds every event answered before
// it (caughtUp).
func (d *DB) compactTo(ctx context.Context, path string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("copy: %w", err)
	}
	if err := d.caughtUp(ctx); err != nil {
		return 0, fmt.Errorf("copy: %w", err)
	}
	dst, err := openCopy(path)
	if err != nil {
		return 0, err
	}
	db := d.db()
	err = db.View(func(src *bolt.Tx) error { return copyInto(ctx, src, dst) })
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// openCopy opens a new bbolt file at path (which may exist, empty) to
// copy into: written without syncs, its owner syncs it once at the end.
func openCopy(path string) (*bolt.DB, error) {
	dst, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, NoSync: true, NoGrowSync: true})
	if err != nil {
		return nil, err
	}
	dst.AllocSize = allocSize
	return dst, nil
}

// copyInto copies every bucket of src, nested ones too, with its keys and
// its sequence, into dst, which holds none of them yet, pages filled full.
func copyInto(ctx context.Context, src *bolt.Tx, dst *bolt.DB) (err error) {
	c := &copier{ctx: ctx, dst: dst}
	c.src.setMap(src.DB().Info().Data, src.Size())
	if c.tx, err = dst.Begin(true); err != nil {
		return err
	}
	err = src.ForEach(func(name []byte, b *bolt.Bucket) error {
		return c.bucket(nil, name, b)
	})
	if err != nil {
		if c.tx != nil {
			c.tx.Rollback()
		}
		c.src.release()
		return err
	}
	return c.commit()
}

// copier copies buckets into dst, committing every copyTxMax bytes.
type copier struct {
	ctx  context.Context
	dst  *bolt.DB
	tx   *bolt.Tx
	size int
	keys int
	src  mapped // the source's pages read since the last commit
}

// commit commits the copy's transaction and gives back the source's
// pages it read: the transaction held them until now (bbolt keeps the
// values it is given until it writes them). Then it syncs the copy: its
// pages go to the disk copyTxMax at a time, not all at the end, where one
// flush of a large copy (480 MB of a 1.1 GB file) held the intake log's
// next sync, and a sender's answer, for 235 ms.
func (c *copier) commit() error {
	err := c.tx.Commit()
	c.src.release()
	if err == nil {
		err = c.dst.Sync()
	}
	return err
}

// bucket copies src, named name under the bucket path parent (nil: the
// top level), with its keys, nested buckets and sequence.
func (c *copier) bucket(parent [][]byte, name []byte, src *bolt.Bucket) error {
	path := append(append([][]byte(nil), parent...), name)
	b, err := c.create(path)
	if err != nil {
		return err
	}
	if err := b.SetSequence(src.Sequence()); err != nil {
		return err
	}
	b.FillPercent = 1.0 // keys come in order: full pages
	cur := src.Cursor()
	for k, v := cur.First(); k != nil; k, v = cur.Next() {
		if v == nil { // a nested bucket
			if err := c.bucket(path, k, src.Bucket(k)); err != nil {
				return err
			}
			b = nil // it may have committed: found again
			continue
		}
		if c.keys++; c.keys%1024 == 0 {
			if err := c.ctx.Err(); err != nil {
				return fmt.Errorf("copy: %w", err)
			}
		}
		if c.size += len(k) + len(v); c.size > copyTxMax {
			if err := c.commit(); err != nil {
				return err
			}
			if c.tx, err = c.dst.Begin(true); err != nil {
				return err
			}
			c.size, b = len(k)+len(v), nil
		}
		if b == nil {
			if b, err = c.find(path); err != nil {
				return err
			}
			b.FillPercent = 1.0
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
		c.src.touch(k)
		c.src.touch(v)
	}
	return nil
}

// create makes the bucket at path in the current transaction.
func (c *copier) create(path [][]byte) (*bolt.Bucket, error) {
	if len(path) == 1 {
		return c.tx.CreateBucket(path[0])
	}
	parent, err := c.find(path[:len(path)-1])
	if err != nil {
		return nil, err
	}
	return parent.CreateBucket(path[len(path)-1])
}

// find returns the bucket at path in the current transaction.
func (c *copier) find(path [][]byte) (*bolt.Bucket, error) {
	b := c.tx.Bucket(path[0])
	for _, name := range path[1:] {
		if b == nil {
			break
		}
		b = b.Bucket(name)
	}
	if b == nil {
		return nil, fmt.Errorf("copy: bucket %q missing", path)
	}
	return b, nil
}
