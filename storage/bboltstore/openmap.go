package bboltstore

import (
	"time"

	bolt "go.etcd.io/bbolt"
)

// releaseEvery is how often an open store gives back the pages of bbolt's
// map that reads and commits have touched since (releaseMap). Under 64
// connections' load for 20 s the commits alone left 130 MB of the file
// resident (docs/BENCHMARKS.md, "Memory and start"); a page wanted again
// costs a minor fault from the page cache. (Tests shorten it.)
var releaseEvery = 5 * time.Second

// releaser runs releaseMap every releaseEvery until Close. Each release
// runs in a read transaction: bbolt remaps the file only when no reader
// holds the map, so the address given to madvise is bbolt's map.
func (d *DB) releaser() {
	defer d.releasing.Done()
	t := time.NewTicker(releaseEvery)
	defer t.Stop()
	for {
		select {
		case <-d.closing:
			return
		case <-t.C:
			d.rawView(func(tx *bolt.Tx) error { releaseMap(tx); return nil })
		}
	}
}
