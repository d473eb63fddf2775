package bboltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"hookbox/app"
)

// eventVersion is the first byte of every stored event; bump it when the
// layout changes and keep decoding the old ones. Version 2 is version 1
// with the unrouted reason after the body; an event without one is still
// written as version 1, so the common record costs no byte more and a
// build that knows only version 1 reads it. Version 3 adds, after the
// unrouted reason, the origin and the provider's time (8 bytes, unix
// nanos, 0 for none): only a fetched event is written so.
const (
	eventVersion1 = 1
	eventVersion  = 2
	eventVersion3 = 3
)

// errCorrupt is returned when a stored record cannot be decoded.
var errCorrupt = errors.New("corrupt record")

// encodeEvent lays an event out as: version, received (8 bytes, unix nanos,
// big-endian), then length-prefixed source, id, topic, the header count and
// pairs, and the body; in version 2, the length-prefixed unrouted reason.
// The received time comes first so that the sweep can read it without
// decoding the rest.
func encodeEvent(e *app.Event) []byte {
	n := 1 + 8 + 5*3 + len(e.Source) + len(e.ID) + len(e.Topic) + 5 + 5 + len(e.Body)
	for _, h := range e.Header {
		n += 10 + len(h.Name) + len(h.Value)
	}
	version := byte(eventVersion1)
	if e.Unrouted != "" {
		version = eventVersion
		n += 5 + len(e.Unrouted)
	}
	if e.Origin != "" || !e.ProviderAt.IsZero() {
		version = eventVersion3
		n += 5 + len(e.Origin) + 8
		if e.Unrouted == "" {
			n += 5
		}
	}
	b := make([]byte, 0, n)
	b = append(b, version)
	b = binary.BigEndian.AppendUint64(b, uint64(e.ReceivedAt.UnixNano()))
	b = appendString(b, e.Source)
	b = appendString(b, e.ID)
	b = appendString(b, e.Topic)
	b = binary.AppendUvarint(b, uint64(len(e.Header)))
	for _, h := range e.Header {
		b = appendString(b, h.Name)
		b = appendString(b, h.Value)
	}
	b = binary.AppendUvarint(b, uint64(len(e.Body)))
	b = append(b, e.Body...)
	if version >= eventVersion {
		b = appendString(b, e.Unrouted)
	}
	if version == eventVersion3 {
		b = appendString(b, e.Origin)
		var at int64
		if !e.ProviderAt.IsZero() {
			at = e.ProviderAt.UnixNano()
		}
		b = binary.BigEndian.AppendUint64(b, uint64(at))
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeEvent decodes a record made by encodeEvent, copying everything out
// of b (which may belong to a bbolt transaction). The text fields (source,
// id, topic, the headers' names and values) are substrings of one string
// copied from b, and the body one copy: two allocations per event rather
// than one per field (the dispatcher decodes every event it sends).
//
// A packed record (pack.go) is unpacked first.
func decodeEvent(b []byte) (*app.Event, error) {
	if len(b) > 0 && b[0] == eventPacked {
		plain, err := unpack(b, nil)
		if err != nil {
			return nil, err
		}
		b = plain
	}
	d := decoder{b: b}
	v := d.byte()
	if v != eventVersion1 && v != eventVersion && v != eventVersion3 {
		return nil, fmt.Errorf("%w: version %d", errCorrupt, v)
	}
	e := &app.Event{ReceivedAt: time.Unix(0, int64(d.uint64()))}
	textAt := len(b) - len(d.b)
	// First the extent of the text fields, then one copy of them.
	skip := d
	for range 3 {
		skip.bytes()
	}
	n := skip.uvarint()
	if n > uint64(len(skip.b)) { // each header takes at least two bytes
		return nil, errCorrupt
	}
	for i := uint64(0); i < 2*n && skip.err == nil; i++ {
		skip.bytes()
	}
	if skip.err != nil {
		return nil, skip.err
	}
	text := string(b[textAt : len(b)-len(skip.b)])
	str := func(v []byte) string { // v lies in b's text fields
		at := cap(b) - cap(v) - textAt
		return text[at : at+len(v)]
	}
	e.Source = str(d.bytes())
	e.ID = str(d.bytes())
	e.Topic = str(d.bytes())
	d.uvarint()
	if n > 0 {
		e.Header = make([]app.HeaderField, 0, n)
	}
	for range n {
		e.Header = append(e.Header, app.HeaderField{Name: str(d.bytes()), Value: str(d.bytes())})
	}
	e.Body = bytes.Clone(d.bytes())
	if e.Body == nil {
		e.Body = []byte{}
	}
	if v >= eventVersion {
		e.Unrouted = string(d.bytes())
	}
	if v == eventVersion3 {
		e.Origin = string(d.bytes())
		if at := int64(d.uint64()); at != 0 {
			e.ProviderAt = time.Unix(0, at)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d trailing bytes", errCorrupt, len(d.b))
	}
	return e, nil
}

// receivedAt reads only the received time of an encoded event, plain or
// packed.
func receivedAt(b []byte) (time.Time, error) {
	if len(b) < 9 || b[0] != eventVersion1 && b[0] != eventVersion && b[0] != eventVersion3 && b[0] != eventPacked {
		return time.Time{}, errCorrupt
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9]))), nil
}

// decoder reads from b and remembers the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) < 1 {
		d.err = errCorrupt
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

func (d *decoder) uint64() uint64 {
	if d.err != nil || len(d.b) < 8 {
		d.err = errCorrupt
		return 0
	}
	v := binary.BigEndian.Uint64(d.b)
	d.b = d.b[8:]
	return v
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errCorrupt
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// Time-ordered keys: 8-byte big-endian unix nanoseconds, then a suffix.
func timeKey(t time.Time, suffix []byte) []byte { return nanoKey(t.UnixNano(), suffix) }

// nanoKey is timeKey for a time given in Unix nanoseconds.
func nanoKey(ns int64, suffix []byte) []byte {
	k := make([]byte, 8, 8+len(suffix))
	binary.BigEndian.PutUint64(k, uint64(ns))
	return append(k, suffix...)
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(nil, seq) }

// idKey is the key of a remembered id: source, a zero byte, the id. Source
// names cannot contain a zero byte (the config forbids it).
func idKey(source, id string) []byte {
	k := make([]byte, 0, len(source)+1+len(id))
	k = append(k, source...)
	k = append(k, 0)
	return append(k, id...)
}

// idValue is the value of a remembered id in the ids bucket of data files
// written before 2026-11-30 (see migrateIDs): its expiry and its event's seq.
func idValue(expires time.Time, seq uint64) []byte {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(expires.UnixNano()))
	return binary.BigEndian.AppendUint64(v, seq)
}

func parseIDValue(v []byte) (expires time.Time, seq uint64, err error) {
	if len(v) != 16 {
		return time.Time{}, 0, errCorrupt
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v))), binary.BigEndian.Uint64(v[8:]), nil
}
