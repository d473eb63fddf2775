package bboltstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// PageStats is what the data file's pages hold (for the tests' logs).
type PageStats struct {
	Pages, Free, Pending int
	Buckets              map[string]BucketBytes
}

// BucketBytes are the bytes a bucket's pages hold and take.
type BucketBytes struct{ Inuse, Alloc int }

// PageStats reports the file's pages and each bucket's bytes.
func (d *DB) PageStats() PageStats {
	d.caughtUp(context.Background()) // the events answered are in the file
	st := PageStats{Buckets: map[string]BucketBytes{}}
	ds := d.db().Stats()
	st.Free, st.Pending = ds.FreePageN, ds.PendingPageN
	d.db().View(func(tx *bolt.Tx) error {
		st.Pages = int(tx.Size() / int64(tx.DB().Info().PageSize))
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			st.Buckets[string(name)] = BucketBytes{s.LeafInuse + s.BranchInuse + s.InlineBucketInuse, s.LeafAlloc + s.BranchAlloc}
			return nil
		})
	})
	return st
}

// Dump returns every key of the data file, nested buckets' too, with its
// value, and every bucket's sequence (see dumpTx).
func (d *DB) Dump() map[string]string {
	var m map[string]string
	d.viewCaught(context.Background(), func(tx *bolt.Tx) error { m = dumpTx(tx); return nil })
	return m
}

// dumpTx maps each key of tx (its bucket path, then the key) to its
// value, and each bucket's path to its sequence.
func dumpTx(tx *bolt.Tx) map[string]string {
	m := map[string]string{}
	var walk func(path string, b *bolt.Bucket)
	walk = func(path string, b *bolt.Bucket) {
		m[path+"\x00seq"] = fmt.Sprint(b.Sequence())
		c := b.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if v == nil {
				walk(path+"/"+string(k), b.Bucket(k))
				continue
			}
			m[path+"\x01"+string(k)] = string(v)
		}
	}
	tx.ForEach(func(name []byte, b *bolt.Bucket) error { walk(string(name), b); return nil })
	return m
}

// diffDumps describes how b differs from a ("" when it does not).
func diffDumps(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, fmt.Sprintf("%q gone", k))
		} else if w != v {
			out = append(out, fmt.Sprintf("%q changed", k))
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%q added", k))
		}
	}
	slices.Sort(out)
	if len(out) > 10 {
		out = append(out[:10], fmt.Sprintf("and %d more", len(out)-10))
	}
	return strings.Join(out, ", ")
}

// DiffDumps is diffDumps for the external tests.
func DiffDumps(a, b map[string]string) string { return diffDumps(a, b) }

// CheckCompactions makes every compaction until tb ends compare, in its
// last round, the file's state with its caught-up copy, key by key, and
// fail when they differ.
func CheckCompactions(tb testing.TB) {
	compactCheck = func(file, copy *bolt.Tx) error {
		if diff := diffDumps(dumpTx(file), dumpTx(copy)); diff != "" {
			tb.Errorf("the compacted copy differs from the file: %s", diff)
			return fmt.Errorf("copy differs: %s", diff)
		}
		return nil
	}
	tb.Cleanup(func() { compactCheck = nil })
}

// SetFreelist sets bbolt's NoFreelistSync and freelist type for the stores
// opened after it (benchmarks compare them); it returns the previous
// settings.
func SetFreelist(noSync bool, typ bolt.FreelistType) (bool, bolt.FreelistType) {
	wasSync, wasType := noFreelistSync, freelistType
	noFreelistSync, freelistType = noSync, typ
	return wasSync, wasType
}

// SetReleaseEvery sets how often the stores opened after it give back
// their map's pages; it returns the previous setting.
func SetReleaseEvery(every time.Duration) time.Duration {
	was := releaseEvery
	releaseEvery = every
	return was
}

// Settle waits until d has applied every event it answered and the
// dictionary training those applies started (if any) is done: what a
// test that compares the file before and after something needs.
func (d *DB) Settle() {
	d.caughtUp(context.Background())
	d.trainers.Wait()
}

// ShopifyOrders is shopifyOrders, for the external tests.
var ShopifyOrders = shopifyOrders
