package rules

// What the two maps of ours (the lazy body object, the headers) share:
// equality with any CEL map, and an iterator over their keys.

import (
	"errors"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
)

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
