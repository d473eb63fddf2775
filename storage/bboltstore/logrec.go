package bboltstore

import (
	"encoding/binary"
	"hash/crc32"
	"time"

	"hookbox/app"
)

// A logged accept: what Accept decided and what applying it to the data
// file needs, written to the intake log (intake.go) before the sender is
// answered. The plan is the one routed at the answer, so that an event
// applied after a restart goes where it was routed, whatever the config
// says by then.
type logged struct {
	seq  uint64
	key  []byte // idKey(source, id)
	exp  int64  // when the id is forgotten, UnixNano
	rec  []byte // the event as Accept stores it (packed)
	plan *app.Plan
	// head is the event without its headers and body, for the counts.
	head app.Event
	// prev is the record of the same key that the tail held when this one
	// was logged, if any (the id accepted again after its expiry).
	prev *logged
}

// A log record on disk: length(4) crc32c(4) payload, the length and the
// checksum of the payload, big-endian. A record whose checksum fails ends
// the log: it is the torn write of a group that was never answered. The
// payload starts with the log id of the data file it was written for
// (meta "log_id", random, made at the file's first Open by a build with
// the log): a data file put in place of another (a restore, an older
// binary's rollback) never takes a record that was not written for it.
const (
	recHead = 8
	// maxRecord bounds a record's length as read back, before anything is
	// allocated for it: a body is at most app.MaxBodySize, and its plan and
	// headers a few KiB.
	maxRecord = 64 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends l's record to b, for the data file whose log id
// is file.
func appendRecord(b []byte, file uint64, l *logged) []byte {
	start := len(b)
	b = append(b, make([]byte, recHead)...)
	b = binary.BigEndian.AppendUint64(b, file)
	b = binary.BigEndian.AppendUint64(b, l.seq)
	b = binary.BigEndian.AppendUint64(b, uint64(l.exp))
	b = binary.AppendUvarint(b, uint64(len(l.key)))
	b = append(b, l.key...)
	b = binary.AppendUvarint(b, uint64(len(l.rec)))
	b = append(b, l.rec...)
	b = appendPlan(b, l.plan)
	payload := b[start+recHead:]
	binary.BigEndian.PutUint32(b[start:], uint32(len(payload)))
	binary.BigEndian.PutUint32(b[start+4:], crc32.Checksum(payload, castagnoli))
	return b
}

// readRecord reads the record at the start of b: the logged accept, the
// log id of the data file it was written for and the bytes it took, or
// ok false when b does not start with a whole, intact record (the log's
// end).
func readRecord(b []byte) (l *logged, file uint64, n int, ok bool) {
	if len(b) < recHead {
		return nil, 0, 0, false
	}
	size := binary.BigEndian.Uint32(b)
	if size == 0 || size > maxRecord || uint64(len(b)-recHead) < uint64(size) {
		return nil, 0, 0, false
	}
	payload := b[recHead : recHead+int(size)]
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(b[4:]) {
		return nil, 0, 0, false
	}
	d := decoder{b: payload}
	file = d.uint64()
	l = &logged{seq: d.uint64(), exp: int64(d.uint64())}
	l.key = d.bytes()
	l.rec = d.bytes()
	l.plan = readPlan(&d)
	if d.err != nil || len(d.b) != 0 || l.seq == 0 {
		return nil, 0, 0, false
	}
	e, err := decodeEvent(l.rec)
	if err != nil {
		return nil, 0, 0, false
	}
	l.head = app.Event{Source: e.Source, ID: e.ID, Topic: e.Topic, ReceivedAt: e.ReceivedAt}
	return l, file, recHead + int(size), true
}

// appendPlan appends p (nil: an empty plan). DebounceOp.Result is not
// kept: applying the record decides it.
func appendPlan(b []byte, p *app.Plan) []byte {
	if p == nil {
		p = &app.Plan{}
	}
	b = binary.AppendUvarint(b, uint64(len(p.Direct)))
	for _, d := range p.Direct {
		b = appendString(appendString(appendString(b, d.Dest), d.Route), d.OrderKey)
	}
	b = binary.AppendUvarint(b, uint64(len(p.Debounce)))
	for _, op := range p.Debounce {
		b = appendString(appendString(b, op.Route), op.Key)
		b = binary.AppendVarint(b, int64(op.Delay))
		b = binary.AppendVarint(b, int64(op.Limit))
		b = binary.AppendVarint(b, int64(op.Window))
		b = appendStrings(b, op.To)
		b = appendString(b, op.OrderKey)
	}
	b = appendStrings(b, p.Unkeyed)
	b = binary.AppendUvarint(b, uint64(len(p.Filtered)))
	for _, f := range p.Filtered {
		b = appendString(appendString(b, f.Route), f.Err)
	}
	return b
}

func appendStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendString(b, s)
	}
	return b
}

// readPlan reads what appendPlan wrote. Counts are bounded by the bytes
// left, so a corrupt count cannot make it allocate more than the record
// holds.
func readPlan(d *decoder) *app.Plan {
	p := &app.Plan{}
	if n := d.count(3); n > 0 {
		p.Direct = make([]app.Direct, n)
		for i := range p.Direct {
			p.Direct[i] = app.Direct{Dest: string(d.bytes()), Route: string(d.bytes()), OrderKey: string(d.bytes())}
		}
	}
	if n := d.count(7); n > 0 {
		p.Debounce = make([]*app.DebounceOp, n)
		for i := range p.Debounce {
			op := &app.DebounceOp{Route: string(d.bytes()), Key: string(d.bytes())}
			op.Delay = time.Duration(d.varint())
			op.Limit = int(d.varint())
			op.Window = time.Duration(d.varint())
			op.To = d.strings()
			op.OrderKey = string(d.bytes())
			p.Debounce[i] = op
		}
	}
	p.Unkeyed = d.strings()
	if n := d.count(2); n > 0 {
		p.Filtered = make([]app.FilterNote, n)
		for i := range p.Filtered {
			p.Filtered[i] = app.FilterNote{Route: string(d.bytes()), Err: string(d.bytes())}
		}
	}
	return p
}

// count reads a count of items of at least min bytes each, failing when
// the bytes left cannot hold that many.
func (d *decoder) count(min int) int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.err = errCorrupt
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) strings() []string {
	n := d.count(1)
	if n == 0 {
		return nil
	}
	ss := make([]string, n)
	for i := range ss {
		ss[i] = string(d.bytes())
	}
	return ss
}
