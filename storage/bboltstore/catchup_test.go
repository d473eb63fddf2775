package bboltstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// The catch-up makes the copy hold what a later snapshot holds, whatever
// the writes between: random puts (some values spanning pages), overwrites,
// deletes of runs of keys, buckets made and dropped, inline buckets grown
// past a page, nested buckets, sequences. After every round the copy and
// the snapshot are compared key by key.
func TestCatchUp_Random(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { catchUpRandom(t, seed) })
	}
}

func catchUpRandom(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 47))
	dir := t.TempDir()
	src, err := bolt.Open(filepath.Join(dir, "src.db"), 0o600, &bolt.Options{NoSync: true, InitialMmapSize: 256 << 20}) // a writer never waits on the reads to grow its map
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	names := []string{"events", "small", "nest", "gone", "seq"}
	key := func() []byte { return binary.BigEndian.AppendUint64(nil, rng.Uint64N(20000)) }
	value := func() []byte {
		n := rng.IntN(300)
		if rng.IntN(50) == 0 {
			n = 4096 + rng.IntN(9000) // an overflow page
		}
		return bytes.Repeat([]byte{byte(rng.Uint32())}, n)
	}
	mutate := func(tx *bolt.Tx, ops int) error {
		for range ops {
			name := []byte(names[rng.IntN(len(names))])
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return err
			}
			switch r := rng.IntN(100); {
			case r < 55:
				if string(name) == "small" {
					if err := b.Put([]byte{byte(rng.IntN(8))}, bytes.Repeat([]byte{'s'}, rng.IntN(20))); err != nil {
						return err
					}
					continue
				}
				if err := b.Put(key(), value()); err != nil {
					return err
				}
			case r < 75: // a run of keys deleted
				c := b.Cursor()
				k, v := c.Seek(key())
				for n := rng.IntN(200); k != nil && n > 0; n-- {
					if v != nil { // not a nested bucket
						if err := c.Delete(); err != nil {
							return err
						}
					}
					k, v = c.Next()
				}
			case r < 85: // a nested bucket, inline while small
				k := []byte(fmt.Sprint("n", rng.IntN(3)))
				if b.Get(k) != nil { // a plain key for now
					continue
				}
				nb, err := b.CreateBucketIfNotExists(k)
				if err != nil {
					return err
				}
				for range rng.IntN(40) {
					if err := nb.Put(key(), bytes.Repeat([]byte{'n'}, rng.IntN(200))); err != nil {
						return err
					}
				}
				if _, err := nb.NextSequence(); err != nil {
					return err
				}
			case r < 88:
				if rng.IntN(4) == 0 {
					if err := tx.DeleteBucket(name); err != nil {
						return err
					}
				}
			case r < 90: // a plain key where a nested bucket was, or the reverse
				k := []byte(fmt.Sprint("n", rng.IntN(3)))
				if b.Bucket(k) != nil {
					if err := b.DeleteBucket(k); err != nil {
						return err
					}
					if err := b.Put(k, value()); err != nil {
						return err
					}
				} else if b.Get(k) != nil {
					if err := b.Delete(k); err != nil {
						return err
					}
				}
			default:
				if _, err := b.NextSequence(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := src.Update(func(tx *bolt.Tx) error { return mutate(tx, 6000) }); err != nil {
		t.Fatal(err)
	}
	dst, err := openCopy(filepath.Join(dir, "copy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	prev, err := src.Begin(false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { prev.Rollback() }() // before src closes: Close waits for it
	if err := copyInto(t.Context(), prev, dst); err != nil {
		t.Fatal(err)
	}
	tr := newTracker()
	if err := tr.build(prev); err != nil {
		t.Fatal(err)
	}
	for round := range 30 {
		for range 1 + rng.IntN(4) {
			if err := src.Update(func(tx *bolt.Tx) error { return mutate(tx, rng.IntN(400)) }); err != nil {
				t.Fatal(err)
			}
		}
		next, err := src.Begin(false)
		if err != nil {
			t.Fatal(err)
		}
		n, err := tr.catchUp(prev, next, dst)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		prev.Rollback()
		prev = next
		err = dst.View(func(copy *bolt.Tx) error {
			if diff := diffDumps(dumpTx(next), dumpTx(copy)); diff != "" {
				return fmt.Errorf("round %d (%d pages changed): the copy differs: %s", round, n, diff)
			}
			for err := range copy.Check() {
				return err
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
