package bboltstore

import (
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
	st := PageStats{Buckets: map[string]BucketBytes{}}
	ds := d.db.Stats()
	st.Free, st.Pending = ds.FreePageN, ds.PendingPageN
	d.db.View(func(tx *bolt.Tx) error {
		st.Pages = int(tx.Size() / int64(tx.DB().Info().PageSize))
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			s := b.Stats()
			st.Buckets[string(name)] = BucketBytes{s.LeafInuse + s.BranchInuse + s.InlineBucketInuse, s.LeafAlloc + s.BranchAlloc}
			return nil
		})
	})
	return st
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

// CPUTime is cpuTime, for the external tests' logs.
var CPUTime = cpuTime
