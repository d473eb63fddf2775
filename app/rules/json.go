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
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

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

// member is one key of an object and the span of its value.
// It is kept small (40 bytes): a Shopify order has fifty of them, made
// for every event.
type member struct {
	hash   uint32
	ks, ke uint32 // the key's bytes in raw, without quotes
	vs, ve uint32
	esc    bool    // the key has escapes or non-ASCII: its decoded form is in object.escaped
	val    ref.Val // decoded on first read
}

// object is a JSON object over its raw bytes, indexed on first use.
type object struct {
	raw     []byte
	depth   int
	indexed bool
	err     error
	members []member
	escaped map[int]string // decoded keys of members with esc, by index
	keys    []string       // unique keys in order, for iteration, made on demand
}

var (
	_ traits.Mapper = (*object)(nil)
)

// fnvPlain hashes a key's raw bytes and reports whether they are plain
// (ASCII, no escape, no control byte): the key is then its bytes.
func fnvPlain(s []byte) (uint32, bool) {
	h := uint32(2166136261)
	for _, c := range s {
		if c == '\\' || c < 0x20 || c >= 0x80 {
			return 0, false
		}
		h = (h ^ uint32(c)) * 16777619
	}
	return h, true
}

func fnvString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
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
	o.members = make([]member, 0, min(len(b)/40, 512)+4)
	for {
		if i >= len(b) || b[i] != '"' {
			return errJSON
		}
		ke, err := skipString(b, i)
		if err != nil {
			return err
		}
		m := member{ks: uint32(i + 1), ke: uint32(ke - 1)}
		h, plain := fnvPlain(b[i+1 : ke-1])
		if !plain {
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
		m.hash = h
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

// lookup returns the member called k: the last one, as encoding/json
// keeps the last of duplicate keys.
func (o *object) lookup(k string) *member {
	h := fnvString(k)
	for i := len(o.members) - 1; i >= 0; i-- {
		m := &o.members[i]
		if m.hash != h {
			continue
		}
		if m.esc {
			if o.escaped[i] == k {
				return m
			}
		} else if string(o.raw[m.ks:m.ke]) == k {
			return m
		}
	}
	return nil
}

func (o *object) value(m *member) ref.Val {
	if m.val == nil {
		v, _, err := decodeValue(o.raw[:m.ve], int(m.vs), o.depth+1)
		if err != nil {
			v = bodyErr(err)
		}
		m.val = v
	}
	return m.val
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
	m := o.lookup(string(k))
	if m == nil {
		return nil, false
	}
	return o.value(m), true
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

// mapEqual compares a map of ours with any CEL map.
func mapEqual(m traits.Mapper, other ref.Val) ref.Val {
	om, ok := other.(traits.Mapper)
	if !ok {
		return types.False
	}
	if m.Size().Equal(om.Size()) != types.True {
		return types.False
	}
	it := m.Iterator()
	for it.HasNext() == types.True {
		k := it.Next()
		v, found := m.Find(k)
		ov, ofound := om.Find(k)
		if !found || !ofound {
			return types.False
		}
		if types.IsError(v) {
			return v
		}
		if eq := v.Equal(ov); eq != types.True {
			return eq
		}
	}
	return types.True
}

// keyIterator walks string keys.
type keyIterator struct {
	keys []string
	i    int
}

func (it *keyIterator) HasNext() ref.Val { return types.Bool(it.i < len(it.keys)) }

func (it *keyIterator) Next() ref.Val {
	if it.i >= len(it.keys) {
		return types.NewErr("no more keys")
	}
	it.i++
	return types.String(it.keys[it.i-1])
}

func (it *keyIterator) ConvertToNative(reflect.Type) (any, error) {
	return nil, errors.New("an iterator has no native form")
}
func (it *keyIterator) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("an iterator has no type conversion")
}
func (it *keyIterator) Equal(ref.Val) ref.Val { return types.False }
func (it *keyIterator) Type() ref.Type        { return types.IteratorType }
func (it *keyIterator) Value() any            { return nil }

// decodeValue decodes the value at b[i] (objects lazily) and returns the
// index after it. depth counts the containers around it.
func decodeValue(b []byte, i, depth int) (ref.Val, int, error) {
	if depth > maxDepth {
		return nil, 0, fmt.Errorf("nested deeper than %d", maxDepth)
	}
	i = skipSpace(b, i)
	if i >= len(b) {
		return nil, 0, errJSON
	}
	switch c := b[i]; {
	case c == '{':
		e, err := skipValue(b, i)
		if err != nil {
			return nil, 0, err
		}
		// Indexed now, not on first read: a broken object is an error
		// where it is read, never a map whose size is an error (CEL's cost
		// tracker takes every size as an int).
		o := &object{raw: b[i:e], depth: depth}
		if err := o.index(); err != nil {
			return nil, 0, err
		}
		return o, e, nil
	case c == '[':
		return decodeArray(b, i, depth)
	case c == '"':
		e, err := skipString(b, i)
		if err != nil {
			return nil, 0, err
		}
		s, err := decodeString(b[i:e])
		if err != nil {
			return nil, 0, err
		}
		return types.String(s), e, nil
	case c == 't' && bytes.HasPrefix(b[i:], []byte("true")):
		return types.True, i + 4, nil
	case c == 'f' && bytes.HasPrefix(b[i:], []byte("false")):
		return types.False, i + 5, nil
	case c == 'n' && bytes.HasPrefix(b[i:], []byte("null")):
		return types.NullValue, i + 4, nil
	case c == '-' || c >= '0' && c <= '9':
		return decodeNumber(b, i)
	}
	return nil, 0, errJSON
}

func decodeArray(b []byte, i, depth int) (ref.Val, int, error) {
	var elems []ref.Val
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return types.NewRefValList(types.DefaultTypeAdapter, []ref.Val{}), i + 1, nil
	}
	for {
		v, e, err := decodeValue(b, i, depth+1)
		if err != nil {
			return nil, 0, err
		}
		elems = append(elems, v)
		i = skipSpace(b, e)
		if i >= len(b) {
			return nil, 0, errJSON
		}
		if b[i] == ']' {
			return types.NewRefValList(types.DefaultTypeAdapter, elems), i + 1, nil
		}
		if b[i] != ',' {
			return nil, 0, errJSON
		}
		i++
	}
}

// decodeNumber makes a JSON integer a CEL int (uint, then double, when
// it does not fit), so that Shopify's 64-bit ids keep every digit, and
// any other number a double.
func decodeNumber(b []byte, i int) (ref.Val, int, error) {
	j := i
	if b[j] == '-' {
		j++
	}
	digits := func() int {
		s := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j - s
	}
	n := digits()
	if n == 0 || n > 1 && b[j-n] == '0' {
		return nil, 0, errJSON
	}
	integer := true
	if j < len(b) && b[j] == '.' {
		j++
		integer = false
		if digits() == 0 {
			return nil, 0, errJSON
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		integer = false
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, 0, errJSON
		}
	}
	s := string(b[i:j])
	if integer {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil {
			return types.Int(v), j, nil
		}
		if v, err := strconv.ParseUint(s, 10, 64); err == nil {
			return types.Uint(v), j, nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, 0, errJSON
	}
	return types.Double(f), j, nil
}

// decodeString decodes a quoted JSON string; invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func decodeString(q []byte) (string, error) {
	s := q[1 : len(q)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		for _, c := range s {
			if c < 0x20 {
				return "", errJSON
			}
		}
		if utf8.Valid(s) {
			return string(s), nil
		}
		return string(bytes.ToValidUTF8(s, []byte("\uFFFD"))), nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < 0x20:
			return "", errJSON
		case c != '\\':
			r, size := utf8.DecodeRune(s[i:])
			out = utf8.AppendRune(out, r) // RuneError for a bad byte
			i += size
			continue
		}
		if i+1 >= len(s) {
			return "", errJSON
		}
		switch s[i+1] {
		case '"', '\\', '/':
			out = append(out, s[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s[i+2:])
			if !ok {
				return "", errJSON
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					r2, _ := hex4(s[i+2:])
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						out = utf8.AppendRune(out, d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", errJSON
		}
		i += 2
	}
	return string(out), nil
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(v), err == nil
}

// parseJSON makes a body CEL's value: an object lazily, anything else in
// full; null when it is not JSON.
func parseJSON(b []byte) ref.Val {
	i := skipSpace(b, 0)
	if i >= len(b) {
		return types.NullValue
	}
	if b[i] == '{' {
		o := &object{raw: b}
		if o.index() != nil {
			return types.NullValue
		}
		return o
	}
	v, e, err := decodeValue(b, i, 0)
	if err != nil || skipSpace(b, e) != len(b) {
		return types.NullValue
	}
	return v
}
