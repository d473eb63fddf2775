package rules

// A transform's value written as JSON, bounded as it is written: a map
// or a list that would make a body over max stops at max, before the
// rest is built.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

type jsonWriter struct {
	b   []byte
	max int
}

func (w *jsonWriter) over() error {
	if w.max > 0 && len(w.b) > w.max {
		return fmt.Errorf("body over %d bytes", w.max)
	}
	return nil
}

func (w *jsonWriter) value(v ref.Val, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("value nested deeper than %d", maxDepth)
	}
	switch x := v.(type) {
	case *types.Err:
		return x
	case types.Null:
		w.b = append(w.b, "null"...)
	case types.Bool:
		w.b = strconv.AppendBool(w.b, bool(x))
	case types.Int:
		w.b = strconv.AppendInt(w.b, int64(x), 10)
	case types.Uint:
		w.b = strconv.AppendUint(w.b, uint64(x), 10)
	case types.Double:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%v cannot be written as JSON", f)
		}
		w.b = appendFloat(w.b, f)
	case types.String:
		w.b = appendString(w.b, string(x))
	case types.Bytes:
		w.b = appendString(w.b, base64.StdEncoding.EncodeToString(x))
	case *object:
		if err := x.index(); err != nil {
			return fmt.Errorf("body: %w", err)
		}
		w.b = append(w.b, '{')
		for i, k := range x.uniqueKeys() {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = appendString(w.b, k)
			w.b = append(w.b, ':')
			if err := w.value(x.value(x.lookup(k)), depth+1); err != nil {
				return err
			}
			if err := w.over(); err != nil {
				return err
			}
		}
		w.b = append(w.b, '}')
	case traits.Mapper:
		return w.mapper(x, depth)
	case traits.Lister:
		w.b = append(w.b, '[')
		n, _ := x.Size().(types.Int)
		for i := types.Int(0); i < n; i++ {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			if err := w.value(x.Get(i), depth+1); err != nil {
				return err
			}
			if err := w.over(); err != nil {
				return err
			}
		}
		w.b = append(w.b, ']')
	default:
		// Timestamps and durations as their CEL strings; anything else
		// (a type, an optional) has no JSON form.
		switch v.Type() {
		case types.TimestampType, types.DurationType:
			s, ok := v.ConvertToType(types.StringType).(types.String)
			if ok {
				w.b = appendString(w.b, string(s))
				break
			}
			fallthrough
		default:
			return fmt.Errorf("a %s cannot be written as JSON", v.Type().TypeName())
		}
	}
	return w.over()
}

// mapper writes a CEL map with its keys sorted: a map literal has no
// order of its own, and the same event must make the same body (its
// signature, a receiver's dedup by hash).
func (w *jsonWriter) mapper(m traits.Mapper, depth int) error {
	type kv struct {
		k string
		v ref.Val
	}
	var kvs []kv
	it := m.Iterator()
	for it.HasNext() == types.True {
		k := it.Next()
		var ks string
		switch x := k.(type) {
		case types.String:
			ks = string(x)
		case types.Int, types.Uint, types.Bool:
			ks = fmt.Sprint(x.Value())
		default:
			return errors.New("a map key must be a string, int, uint or bool")
		}
		v, _ := m.Find(k)
		if v == nil {
			return errors.New("a map changed while it was written")
		}
		kvs = append(kvs, kv{ks, v})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
	w.b = append(w.b, '{')
	for i, e := range kvs {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = appendString(w.b, e.k)
		w.b = append(w.b, ':')
		if err := w.value(e.v, depth+1); err != nil {
			return err
		}
		if err := w.over(); err != nil {
			return err
		}
	}
	w.b = append(w.b, '}')
	return nil
}

// appendFloat formats f as encoding/json does.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\\ufffd"...)
		} else if r == '\u2028' || r == '\u2029' {
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
