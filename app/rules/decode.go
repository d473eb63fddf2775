package rules

// Decoding one JSON value into CEL's: what a member of the lazy object
// becomes when an expression reads it (json.go), and a body that is not
// an object, in full.

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
)

// decodeValue decodes the value at b[i] (objects lazily) and returns the
// index after it. depth counts the containers around it.
func decodeValue(b []byte, i, depth int, bud *budget) (ref.Val, int, error) {
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
		o := &object{raw: b[i:e], depth: depth, bud: bud}
		if err := o.index(); err != nil {
			return nil, 0, err
		}
		return o, e, nil
	case c == '[':
		return decodeArray(b, i, depth, bud)
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

func decodeArray(b []byte, i, depth int, bud *budget) (ref.Val, int, error) {
	var elems []ref.Val
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return types.NewRefValList(types.DefaultTypeAdapter, []ref.Val{}), i + 1, nil
	}
	for {
		if err := bud.take(); err != nil {
			return nil, 0, err
		}
		v, e, err := decodeValue(b, i, depth+1, bud)
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

// decodeString decodes a quoted JSON string; each byte of invalid UTF-8
// becomes U+FFFD, as encoding/json (and so most destinations) does.
func decodeString(q []byte) (string, error) {
	s := q[1 : len(q)-1]
	valid := utf8.Valid(s)
	if bytes.IndexByte(s, '\\') < 0 {
		for _, c := range s {
			if c < 0x20 {
				return "", errJSON
			}
		}
		if valid {
			return string(s), nil
		}
	}
	// Escapes only shrink; each invalid byte grows to three: sized once,
	// so a megabyte of bad bytes costs its three megabytes and no more.
	n := len(s)
	if !valid {
		n += 2 * invalidBytes(s)
	}
	var out strings.Builder
	out.Grow(n)
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c < 0x20:
			return "", errJSON
		case c != '\\':
			r, size := utf8.DecodeRune(s[i:])
			out.WriteRune(r) // RuneError for a bad byte
			i += size
			continue
		}
		if i+1 >= len(s) {
			return "", errJSON
		}
		switch s[i+1] {
		case '"', '\\', '/':
			out.WriteByte(s[i+1])
		case 'b':
			out.WriteByte('\b')
		case 'f':
			out.WriteByte('\f')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 't':
			out.WriteByte('\t')
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
						out.WriteRune(d)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out.WriteRune(r)
			continue
		default:
			return "", errJSON
		}
		i += 2
	}
	return out.String(), nil
}

// invalidBytes counts the bytes of s that are not UTF-8 (each becomes
// U+FFFD).
func invalidBytes(s []byte) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			n++
		}
		i += size
	}
	return n
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(v), err == nil
}

// parseJSON makes a body CEL's value: an object lazily, anything else in
// full; null when it is not JSON. A body with more values than one event
// may decode is an error where it is read, not null: it is JSON.
func parseJSON(b []byte) ref.Val {
	bud := &budget{left: maxValues}
	i := skipSpace(b, 0)
	if i >= len(b) {
		return types.NullValue
	}
	if b[i] == '{' {
		o := &object{raw: b, bud: bud}
		if err := o.index(); err != nil {
			if errors.Is(err, errBudget) {
				return bodyErr(err)
			}
			return types.NullValue
		}
		return o
	}
	v, e, err := decodeValue(b, i, 0, bud)
	if errors.Is(err, errBudget) {
		return bodyErr(err)
	}
	if err != nil || skipSpace(b, e) != len(b) {
		return types.NullValue
	}
	return v
}

// maxValues bounds the members and elements one event's body is
// decoded into, however it is read: each costs 40-200 bytes, so a body
// of a million one-byte values cannot make a hundred megabytes. A
// Shopify order has a few hundred; a product with a hundred variants a
// few thousand.
const maxValues = 1 << 16

var errBudget = fmt.Errorf("more than %d values to decode", maxValues)

// budget counts what is left of maxValues for one event.
type budget struct{ left int }

func (b *budget) take() error {
	if b == nil {
		return nil
	}
	if b.left <= 0 {
		return errBudget
	}
	b.left--
	return nil
}
