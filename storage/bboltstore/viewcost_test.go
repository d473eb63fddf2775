package bboltstore

import (
	"context"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// BenchmarkView is the cost of a read through view (the handle behind an
// atomic pointer, a compaction's swap retried) against bbolt's View on the
// handle held directly.
func BenchmarkView(b *testing.B) {
	d, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	get := func(tx *bolt.Tx) error { tx.Bucket(bucketEvents).Get([]byte("k")); return nil }
	b.Run("direct", func(b *testing.B) {
		db := d.db()
		for b.Loop() {
			db.View(get)
		}
	})
	b.Run("view", func(b *testing.B) {
		for b.Loop() {
			d.view(context.Background(), get)
		}
	})
}
