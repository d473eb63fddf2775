// Packed events (issue 47): an event's headers and body stored compressed
// with zstd, its name and received time left plain so that the sweep,
// the lists and the replay read them without decompressing anything.

package bboltstore

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"github.com/klauspost/compress/zstd"

	"hookbox/app"
)

// eventPacked is the first byte of a packed event: a plain record (any
// version encodeEvent writes or decodeEvent reads) laid out as
//
//	eventPacked, received (8), source, id, topic (as in the plain record),
//	body length (uvarint), codec (1 byte), unpacked length (uvarint),
//	payload
//
// where the payload, once unpacked, is the plain record's version byte
// followed by everything after its topic (headers, body, what later
// versions add). Far from the plain versions' numbers, so that neither
// is mistaken for the other as both grow.
const eventPacked = 0x40

// The codecs of a packed event's payload.
const (
	codecRaw  = 0 // stored as it is: compression would not make it smaller
	codecZstd = 1 // one zstd frame, with its checksum
)

// maxUnpacked bounds what a packed event unpacks to: the largest body
// max_body_bytes allows (64 MiB) and room for the headers. A record that
// says more, or a frame that would make more, is corrupt: a stored body
// never expands past what a request could have carried.
const maxUnpacked = 64<<20 + 1<<20

// zstd's encoder and decoder, made at first use (they hold tables that an
// idle hookbox need not pay for), shared: EncodeAll and DecodeAll may run
// concurrently. The default level: on the synthetic Shopify orders it
// takes 2.34× (zstd's fastest 2.31×, S2 1.78×) for 22 µs per 2.8 KB
// body, and unpacks one in 5.5 µs (BenchmarkPack).
var (
	zstdEncoder = sync.OnceValue(func() *zstd.Encoder {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithLowerEncoderMem(true))
		if err != nil {
			panic(err) // only for invalid options
		}
		return e
	})
	zstdDecoder = sync.OnceValue(func() *zstd.Decoder {
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
			zstd.WithDecoderMaxMemory(maxUnpacked), zstd.WithDecoderMaxWindow(maxUnpacked))
		if err != nil {
			panic(err)
		}
		return d
	})
)

// packEvent encodes e as Accept stores it: packed, its headers and body
// compressed (with the file's dictionary, when it has one: dict.go) when
// that makes the record smaller.
func (d *DB) packEvent(e *app.Event) []byte {
	enc := zstdEncoder()
	if p := d.packer.Load(); p != nil {
		enc = p.enc
	}
	return packEvent(e, enc)
}

// packEvent packs e with enc.
func packEvent(e *app.Event, enc *zstd.Encoder) []byte {
	return pack(encodeEvent(e), len(e.Body), enc)
}

// pack packs plain, a record made by encodeEvent whose body is bodyLen
// bytes long, with enc.
func pack(plain []byte, bodyLen int, enc *zstd.Encoder) []byte {
	h := decoder{b: plain[9:]}
	h.bytes() // source
	h.bytes() // id
	h.bytes() // topic
	headEnd := len(plain) - len(h.b)
	tail := make([]byte, 0, 1+len(h.b))
	tail = append(append(tail, plain[0]), h.b...)
	b := make([]byte, 0, headEnd+20+len(tail))
	b = append(b, eventPacked)
	b = append(b, plain[1:headEnd]...)
	b = binary.AppendUvarint(b, uint64(bodyLen))
	z := enc.EncodeAll(tail, nil)
	if len(z) >= len(tail) || len(tail) > maxUnpacked {
		b = append(b, codecRaw)
		b = binary.AppendUvarint(b, uint64(len(tail)))
		return append(b, tail...)
	}
	b = append(b, codecZstd)
	b = binary.AppendUvarint(b, uint64(len(tail)))
	return append(b, z...)
}

// packedHead reads a packed record's head: where its plain part (received,
// source, id, topic) ends, the body's length, the codec, the unpacked
// length and the payload.
func packedHead(b []byte) (headEnd int, bodyLen uint64, codec byte, size uint64, payload []byte, err error) {
	if len(b) < 9 || b[0] != eventPacked {
		return 0, 0, 0, 0, nil, errCorrupt
	}
	d := decoder{b: b[9:]}
	d.bytes() // source
	d.bytes() // id
	d.bytes() // topic
	headEnd = len(b) - len(d.b)
	bodyLen = d.uvarint()
	codec = d.byte()
	size = d.uvarint()
	if d.err != nil {
		return 0, 0, 0, 0, nil, d.err
	}
	if size == 0 || size > maxUnpacked || bodyLen > size {
		return 0, 0, 0, 0, nil, fmt.Errorf("%w: packed event of %d bytes", errCorrupt, size)
	}
	return headEnd, bodyLen, codec, size, d.b, nil
}

// unpack returns the plain record of the packed record b, in buf's room
// (nil: a new buffer); what it returns is never part of b. The payload
// must unpack to exactly the length the record says.
func unpack(b, buf []byte) ([]byte, error) {
	headEnd, _, _, size, _, err := packedHead(b)
	if err != nil {
		return nil, err
	}
	// The plain record: the tail's version byte, the head, then the rest
	// of the tail, unpacked after the head and its first byte moved.
	need := headEnd + int(size)
	if cap(buf) < need {
		buf = make([]byte, 0, need)
	}
	tail, err := unpackTail(b, buf[:headEnd])
	if err != nil {
		return nil, err
	}
	out := buf[:need]
	out[0] = tail[0]
	copy(out[1:headEnd], b[1:headEnd])
	return append(out[:headEnd], tail[1:]...), nil
}

// unpackTail unpacks the payload of the packed record b, appending it to
// dst (which keeps its room for the next when it has enough) and returning
// what it appended: the plain record's version byte and everything after
// its topic (see eventPacked), what a body search reads. It never makes
// more than the record says it holds, and the payload must make exactly
// that.
func unpackTail(b, dst []byte) ([]byte, error) {
	_, _, codec, size, payload, err := packedHead(b)
	if err != nil {
		return nil, err
	}
	at := len(dst)
	if cap(dst)-at < int(size) {
		dst = append(make([]byte, 0, at+int(size)), dst...)
	}
	switch codec {
	case codecRaw:
		if uint64(len(payload)) != size {
			return nil, fmt.Errorf("%w: raw payload of %d bytes, %d said", errCorrupt, len(payload), size)
		}
		return append(dst, payload...)[at:], nil
	case codecZstd:
		// A frame says its size (zstd leaves it out below 256 bytes): one
		// that says another is refused before anything is unpacked, and
		// the decoder stops any frame at maxUnpacked.
		var fh zstd.Header
		if err := fh.Decode(payload); err != nil || fh.HasFCS && fh.FrameContentSize != size {
			return nil, fmt.Errorf("%w: zstd frame does not say %d bytes", errCorrupt, size)
		}
		dec := decoderFor(fh.DictionaryID)
		if dec == nil {
			return nil, fmt.Errorf("%w: no dictionary %d", errCorrupt, fh.DictionaryID)
		}
		out, err := dec.DecodeAll(payload, dst)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errCorrupt, err)
		}
		if uint64(len(out)-at) != size {
			return nil, fmt.Errorf("%w: unpacked %d bytes, %d said", errCorrupt, len(out)-at, size)
		}
		return out[at:], nil
	default:
		return nil, fmt.Errorf("%w: codec %d", errCorrupt, codec)
	}
}

// unpackedSize is how many bytes the encoded event v stands for: a packed
// one's once unpacked. The long reads pace themselves by it (a body
// compressed 1000× is still that much to search).
func unpackedSize(v []byte) int {
	if len(v) > 0 && v[0] == eventPacked {
		if headEnd, _, _, size, _, err := packedHead(v); err == nil {
			return headEnd + int(size)
		}
	}
	return len(v)
}
