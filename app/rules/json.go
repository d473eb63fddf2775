package rules

// The body as CEL sees it, made lazily from the raw bytes: an object is
// indexed once with a skip-scanner (each member's key and byte span, no
// value decoded), and a member is decoded only when an expression reads
// it, then kept. A filter that reads two fields of a 2 KiB order costs
// one scan of the bytes and two small decodes, not a map of everything.
//
// The caveat of being lazy: the top-level scan matches brackets and
// strings but does not check what lies inside a member nobody reads, so
// a body like {"a": 1, "b": [tru]} is an object whose "b" fails when it
// is read ("body: invalid JSON ..."), where a full decoder would have
// called the whole body invalid (null). A body whose brackets, strings
// or top level are wrong is null, as the design says.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

// maxDepth bounds how deep a value is decoded (and written out by a
// transform): deeper is an error when read, never a deep Go stack.
const maxDepth = 128

var errJSON = errors.New("invalid JSON")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string whose quote is at b[i].
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, errJSON
		}
		j += k
		// The quote ends the string unless an odd run of backslashes
		// escapes it.
		n := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			n++
		}
		j++
		if n%2 == 0 {
			return j, nil
		}
	}
}

// skipValue returns the index after the value that starts at b[i]. It
// checks brackets and strings, not scalars: iterative, so any nesting
// costs no stack.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
	default:
		j := i
		for j < len(b) && !isSpace(b[j]) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ':' {
			j++
		}
		if j == i {
			return 0, errJSON
		}
		return j, nil
	}
	depth := 0
	for j := i; j < len(b); {
		// Most bytes of a nested value are none of "{}[]: skip them in
		// a tight loop.
		for j < len(b) && !structural[b[j]] {
			j++
		}
		if j >= len(b) {
			break
		}
		switch b[j] {
		case '"':
			e, err := skipString(b, j)
			if err != nil {
				return 0, err
			}
			j = e
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
		j++
	}
	return 0, errJSON
}

// structural marks the bytes skipValue stops at inside a container.
var structural = [256]bool{'"': true, '{': true, '}': true, '[': true, ']': true}

// member is one key of an object and the span of its value. It holds
// no pointer (24 bytes), so the slice of a Shopify order's fifty costs
// the collector nothing to scan and append no write barrier; what a
// member decodes to is kept in object.vals.
type member struct {
	hash   uint32
	ks, ke uint32 // the key's bytes in raw, without quotes
	vs, ve uint32
	esc    bool // the key has escapes or non-ASCII: its decoded form is in object.escaped
}

// decoded is a member's value once read.
type decoded struct {
	i int
	v ref.Val
}

// object is a JSON object over its raw bytes, indexed on first use.
type object struct {
	raw     []byte
	bud     *budget // the event's, shared by every value of its body
	depth   int
	indexed bool
	err     error
	members []member
	vals    []decoded      // the members read so far: a filter reads a few
	escaped map[int]string // decoded keys of members with esc, by index
	keys    []string       // unique keys in order, for iteration, made on demand
}

var (
	_ traits.Mapper = (*object)(nil)
)

const (
	fnvOffset = 2166136261
	fnvPrime  = 16777619
)

// plainKey hashes the key whose quote is at b[i] and returns the index
// after its closing quote, in one pass. ok is false when the key is not
// plain (an escape, a control or non-ASCII byte, no closing quote): the
// caller then takes the slow path.
func plainKey(b []byte, i int) (h uint32, end int, ok bool) {
	h = fnvOffset
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			return h, j + 1, true
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return 0, 0, false
		}
		h = (h ^ uint32(c)) * fnvPrime
	}
	return 0, 0, false
}

func fnvString(s string) uint32 {
	h := uint32(fnvOffset)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * fnvPrime
	}
	return h
}

// index scans the object once: keys and value spans.
func (o *object) index() error {
	if o.indexed {
		return o.err
	}
	o.indexed = true
	o.err = o.scan()
	if o.err != nil {
		o.members = nil
	}
	return o.err
}

func (o *object) scan() error {
	b := o.raw
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errJSON
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return o.end(i + 1)
	}
	// About one member per 40 bytes in the bodies webhooks carry: one
	// allocation for most objects instead of a slice grown four times.
	o.members = make([]member, 0, len(b)/40+1)
	for {
		if i >= len(b) || b[i] != '"' {
			return errJSON
		}
		if err := o.bud.take(); err != nil {
			return err
		}
		m := member{ks: uint32(i + 1)}
		h, ke, plain := plainKey(b, i)
		if !plain {
			var err error
			if ke, err = skipString(b, i); err != nil {
				return err
			}
			s, err := decodeString(b[i:ke])
			if err != nil {
				return err
			}
			if o.escaped == nil {
				o.escaped = map[int]string{}
			}
			o.escaped[len(o.members)] = s
			m.esc = true
			h = fnvString(s)
		}
		m.hash, m.ke = h, uint32(ke-1)
		i = skipSpace(b, ke)
		if i >= len(b) || b[i] != ':' {
			return errJSON
		}
		i = skipSpace(b, i+1)
		m.vs = uint32(i)
		ve, err := skipValue(b, i)
		if err != nil {
			return err
		}
		m.ve = uint32(ve)
		o.members = append(o.members, m)
		i = skipSpace(b, ve)
		if i >= len(b) {
			return errJSON
		}
		if b[i] == '}' {
			return o.end(i + 1)
		}
		if b[i] != ',' {
			return errJSON
		}
		i = skipSpace(b, i+1)
	}
}

// end checks that nothing but space follows the object.
func (o *object) end(i int) error {
	if skipSpace(o.raw, i) != len(o.raw) {
		return errJSON
	}
	return nil
}

func (o *object) keyOf(i int) string {
	if m := &o.members[i]; !m.esc {
		return string(o.raw[m.ks:m.ke])
	}
	return o.escaped[i]
}

// lookup returns the index of the member called k, or -1: the last
// one, as encoding/json keeps the last of duplicate keys.
func (o *object) lookup(k string) int {
	h := fnvString(k)
	for i := len(o.members) - 1; i >= 0; i-- {
		m := &o.members[i]
		if m.hash != h {
			continue
		}
		if m.esc {
			if o.escaped[i] == k {
				return i
			}
		} else if string(o.raw[m.ks:m.ke]) == k {
			return i
		}
	}
	return -1
}

// value is member i decoded, kept for the next read.
func (o *object) value(i int) ref.Val {
	for _, d := range o.vals {
		if d.i == i {
			return d.v
		}
	}
	m := &o.members[i]
	v, _, err := decodeValue(o.raw[:m.ve], int(m.vs), o.depth+1, o.bud)
	if err != nil {
		v = bodyErr(err)
	}
	if o.vals == nil {
		o.vals = make([]decoded, 0, 8)
	}
	o.vals = append(o.vals, decoded{i, v})
	return v
}

func bodyErr(err error) ref.Val {
	return types.NewErr("body: %v", err)
}

// Find implements traits.Mapper: keys are strings; any other key is
// absent.
func (o *object) Find(key ref.Val) (ref.Val, bool) {
	if err := o.index(); err != nil {
		return bodyErr(err), false
	}
	k, ok := key.(types.String)
	if !ok {
		if types.IsUnknownOrError(key) {
			return key, false
		}
		return nil, false
	}
	i := o.lookup(string(k))
	if i < 0 {
		return nil, false
	}
	return o.value(i), true
}

// Get implements traits.Indexer.
func (o *object) Get(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

// Contains implements traits.Container (`"k" in body`).
func (o *object) Contains(key ref.Val) ref.Val {
	v, found := o.Find(key)
	if !found && v != nil && types.IsUnknownOrError(v) {
		return v
	}
	return types.Bool(found)
}

// uniqueKeys lists each key once, in the order of the body. It costs a
// map, so only iteration, size and equality pay it.
func (o *object) uniqueKeys() []string {
	if o.keys != nil || o.index() != nil {
		return o.keys
	}
	seen := make(map[string]bool, len(o.members))
	o.keys = make([]string, 0, len(o.members))
	for i := range o.members {
		k := o.keyOf(i)
		if !seen[k] {
			seen[k] = true
			o.keys = append(o.keys, k)
		}
	}
	return o.keys
}

// Size implements traits.Sizer. Objects are indexed when made, so a
// broken one never gets here; it would be empty.
func (o *object) Size() ref.Val {
	return types.Int(len(o.uniqueKeys()))
}

// Iterator implements traits.Iterable: the keys, in the body's order.
func (o *object) Iterator() traits.Iterator {
	return &keyIterator{keys: o.uniqueKeys()}
}

// ConvertToNative decodes the whole object for Go callers (map[string]any).
func (o *object) ConvertToNative(t reflect.Type) (any, error) {
	if err := o.index(); err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(o.raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("body: %w", errJSON)
	}
	if reflect.TypeOf(v).AssignableTo(t) {
		return v, nil
	}
	return nil, fmt.Errorf("body: cannot convert a map to %v", t)
}

// ConvertToType implements ref.Val.
func (o *object) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return o
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

// Equal implements ref.Val: the same keys with equal values.
func (o *object) Equal(other ref.Val) ref.Val {
	return mapEqual(o, other)
}

// Type implements ref.Val.
func (o *object) Type() ref.Type { return types.MapType }

// Value implements ref.Val: the decoded map, or nil when it is broken.
func (o *object) Value() any {
	v, _ := o.ConvertToNative(reflect.TypeOf(map[string]any(nil)))
	return v
}
