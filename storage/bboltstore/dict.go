// Compression dictionaries (issue 47): zstd alone takes a 2.7 KB Shopify
// order to 1.2 KB, because one order is too short to repeat much of
// itself; what repeats is across orders (the field names, the shape). A
// dictionary trained from the data file's own newest events, once it holds
// enough of them, takes the next ones to about 650 bytes. Nothing is
// trained in advance for one provider: each data file learns from its own
// traffic, whatever sends it.

package bboltstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/zstd"
	bolt "go.etcd.io/bbolt"
)

// bucketDicts holds every dictionary a packed event may name: id(4) →
// the dictionary (zstd's format, the id inside). One is never deleted:
// the events packed with it would become unreadable.
var bucketDicts = []byte("dicts")

// Training: once the data file holds dictAfter events and no dictionary,
// one is trained from the newest dictSamples events' packed parts, at
// most dictMaxSize bytes.
const (
	dictAfter   = 1000
	dictSamples = 256
	dictMaxSize = 16 << 10
)

// packer packs new events: with the newest dictionary when there is one.
type packer struct {
	id  uint32 // 0: none
	enc *zstd.Encoder
}

// decoders are the zstd decoders of the dictionaries loaded from every
// data file opened in this process, by id (ids are random 32-bit
// numbers). An id already known with other contents refuses the file.
// The map is replaced whole when one is added (rarely), so that readers,
// a search's on every core, look it up without a lock.
var decoders = struct {
	sync.Mutex
	m       atomic.Pointer[map[uint32]*zstd.Decoder]
	content map[uint32]string
}{content: map[uint32]string{}}

// errDictClash means two data files opened in one process hold different
// dictionaries under the same id (one chance in 2^32).
var errDictClash = errors.New("compression dictionary id already used by another data file")

// registerDict makes dictionary d readable by its id and returns the id.
func registerDict(d []byte) (uint32, error) {
	if len(d) < 8 || binary.LittleEndian.Uint32(d) != 0xEC30A437 {
		return 0, fmt.Errorf("%w: not a zstd dictionary", errCorrupt)
	}
	id := binary.LittleEndian.Uint32(d[4:])
	decoders.Lock()
	defer decoders.Unlock()
	if c, ok := decoders.content[id]; ok {
		if c != string(d) {
			return 0, fmt.Errorf("dictionary %d: %w", id, errDictClash)
		}
		return id, nil
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithDecoderDicts(d),
		zstd.WithDecoderMaxMemory(maxUnpacked), zstd.WithDecoderMaxWindow(maxUnpacked))
	if err != nil {
		return 0, fmt.Errorf("%w: dictionary %d: %v", errCorrupt, id, err)
	}
	m := map[uint32]*zstd.Decoder{id: dec}
	if old := decoders.m.Load(); old != nil {
		for k, v := range *old {
			m[k] = v
		}
	}
	decoders.m.Store(&m)
	decoders.content[id] = string(d)
	return id, nil
}

// decoderFor returns the decoder of frames packed with dictionary id (0:
// none), or nil when no open data file has it.
func decoderFor(id uint32) *zstd.Decoder {
	if id == 0 {
		return zstdDecoder()
	}
	if m := decoders.m.Load(); m != nil {
		return (*m)[id]
	}
	return nil
}

// newPacker makes the packer of dictionary d (id id). Its literals are
// stored without entropy coding: with a dictionary most of a body comes
// from it as matches, the literals left are few, and Huffman-coding them
// saved 8% of the bytes (906 against 980 per Shopify order) for a third
// of the time each unpack takes (10 µs against 6.5), which a body search
// pays for every event it reads (BenchmarkSearch_Packed).
func newPacker(id uint32, d []byte) (*packer, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderDict(d), zstd.WithNoEntropyCompression(true),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("dictionary %d: %w", id, err)
	}
	return &packer{id: id, enc: enc}, nil
}

// loadDicts registers every dictionary of the file and returns the packer
// of the newest (the last one written), nil when there is none.
func loadDicts(tx *bolt.Tx) (*packer, error) {
	b := tx.Bucket(bucketDicts)
	if b == nil {
		return nil, nil
	}
	var last []byte
	var lastID uint32
	err := b.ForEach(func(_, v []byte) error {
		id, err := registerDict(v)
		if err != nil {
			return err
		}
		last, lastID = append(last[:0], v...), id // keyed by seq: the last is the newest
		return nil
	})
	if err != nil || last == nil {
		return nil, err
	}
	return newPacker(lastID, last)
}

// maybeTrain starts training a dictionary when the file has none, holds
// enough events and no training runs: called after a commit of accepts.
func (d *DB) maybeTrain() {
	if d.packer.Load() != nil || d.accepted.Add(1) < dictAfter || !d.training.CompareAndSwap(false, true) {
		return
	}
	d.trainers.Add(1)
	go func() {
		defer d.trainers.Done()
		if err := d.trainDictionary(context.Background()); err != nil {
			d.accepted.Store(0) // tried again after dictAfter more
			d.training.Store(false)
		}
	}()
}

// trainDictionary trains a dictionary from the newest events' packed
// parts and packs the events accepted after it with it. The dictionary is
// durable before any event uses it.
func (d *DB) trainDictionary(ctx context.Context) error {
	var samples [][]byte
	err := d.view(ctx, func(tx *bolt.Tx) error {
		samples = samples[:0]
		c := tx.Bucket(bucketEvents).Cursor()
		for k, v := c.Last(); k != nil && len(samples) < dictSamples; k, v = c.Prev() {
			plain := v
			if len(v) > 0 && v[0] == eventPacked {
				var err error
				if plain, err = unpack(v, nil); err != nil {
					continue
				}
			}
			if len(plain) < 9 {
				continue
			}
			h := decoder{b: plain[9:]}
			h.bytes()
			h.bytes()
			h.bytes()
			if h.err == nil {
				samples = append(samples, append([]byte{plain[0]}, h.b...))
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	var total int
	for _, s := range samples {
		total += len(s)
	}
	if len(samples) < dictSamples/4 || total < 2*dictMaxSize {
		return fmt.Errorf("train a dictionary: %d events, %d bytes", len(samples), total)
	}
	dd, err := buildDict(samples)
	if err != nil {
		return fmt.Errorf("train a dictionary: %w", err)
	}
	id, err := registerDict(dd)
	if err != nil {
		return err
	}
	p, err := newPacker(id, dd)
	if err != nil {
		return err
	}
	err = d.update(ctx, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketDicts)
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		return b.Put(seqKey(seq), dd)
	})
	if err != nil {
		return fmt.Errorf("store a dictionary: %w", err)
	}
	d.packer.Store(p)
	return nil
}

// buildDict trains a dictionary from samples. The builder panics on some
// inputs (samples with nothing in common to count): that is an error here,
// and the events go on being packed without one.
func buildDict(samples [][]byte) (d []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			d, err = nil, fmt.Errorf("dictionary builder: %v", r)
		}
	}()
	return dict.BuildZstdDict(samples, dict.Options{MaxDictSize: dictMaxSize, HashBytes: 6, ZstdLevel: zstd.SpeedFastest})
}
