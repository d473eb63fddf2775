package rules

// What an expression's variables are made of: the event's RuleInput,
// parsed on first read and kept in its Parsed field for the event's
// other routes.

import (
	"errors"
	"mime"
	"net/url"
	"reflect"
	"strings"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"cel.dev/cel-go/interpreter"

	"hookbox/app"
)

// vars is the activation of one event: each variable made when an
// expression first reads it. It is not safe for concurrent use: one
// RuleInput belongs to one goroutine at a time.
type vars struct {
	in      *app.RuleInput
	body    ref.Val
	headers *headerMap
}

var _ interpreter.Activation = (*vars)(nil)

// activation returns in's vars, made and kept in in.Parsed on first use.
// A RuleInput reused for another event must have Parsed set to nil.
func activation(in *app.RuleInput) *vars {
	if v, ok := in.Parsed.(*vars); ok && v.in == in {
		return v
	}
	v := &vars{in: in}
	in.Parsed = v
	return v
}

// ResolveName implements interpreter.Activation.
func (v *vars) ResolveName(name string) (any, bool) {
	switch name {
	case "body":
		if v.body == nil {
			v.body = parseBody(v.in)
		}
		return v.body, true
	case "headers":
		if v.headers == nil {
			v.headers = &headerMap{h: v.in.Header}
		}
		return v.headers, true
	case "topic":
		return types.String(v.in.Topic), true
	case "source":
		return types.String(v.in.Source), true
	case "id":
		return types.String(v.in.ID), true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (v *vars) Parent() interpreter.Activation { return nil }

// parseBody is body: a form's fields (first values) when the
// Content-Type says so, else the JSON value, else null.
func parseBody(in *app.RuleInput) ref.Val {
	if isForm(in.Header) {
		q, _ := url.ParseQuery(string(in.Body)) // the pairs that parse; a bad one is left out
		m := make(map[string]string, len(q))
		for k, vs := range q {
			if len(vs) > 0 {
				m[strings.ToValidUTF8(k, "\uFFFD")] = strings.ToValidUTF8(vs[0], "\uFFFD")
			}
		}
		return types.NewStringStringMap(types.DefaultTypeAdapter, m)
	}
	return parseJSON(in.Body)
}

func isForm(h []app.HeaderField) bool {
	for _, f := range h {
		if strings.EqualFold(f.Name, "Content-Type") {
			mt, _, err := mime.ParseMediaType(f.Value)
			return err == nil && mt == "application/x-www-form-urlencoded"
		}
	}
	return false
}

// hiddenHeaders are credentials of the sender's own systems: expressions
// never see them, so that no error or transformed body can carry one.
// hookbox does not store them either (keptHeaders in app/receive).
var hiddenHeaders = map[string]bool{"authorization": true, "proxy-authorization": true, "cookie": true}

// headerMap is headers: lower-case names to the first value, over the
// event's header list without copying it. A lookup ignores case.
type headerMap struct {
	h    []app.HeaderField
	keys []string
}

var _ traits.Mapper = (*headerMap)(nil)

// Find implements traits.Mapper.
func (m *headerMap) Find(key ref.Val) (ref.Val, bool) {
	k, ok := key.(types.String)
	if !ok {
		if types.IsUnknownOrError(key) {
			return key, false
		}
		return nil, false
	}
	for _, f := range m.h {
		if strings.EqualFold(f.Name, string(k)) {
			if hiddenHeaders[strings.ToLower(f.Name)] {
				return nil, false
			}
			return types.String(strings.ToValidUTF8(f.Value, "\uFFFD")), true
		}
	}
	return nil, false
}

func (m *headerMap) names() []string {
	if m.keys == nil {
		m.keys = []string{}
		seen := map[string]bool{}
		for _, f := range m.h {
			n := strings.ToLower(f.Name)
			if !seen[n] && !hiddenHeaders[n] {
				seen[n] = true
				m.keys = append(m.keys, n)
			}
		}
	}
	return m.keys
}

// Get implements traits.Indexer.
func (m *headerMap) Get(key ref.Val) ref.Val {
	v, found := m.Find(key)
	if !found {
		return types.ValOrErr(v, "no such key: %v", key)
	}
	return v
}

// Contains implements traits.Container.
func (m *headerMap) Contains(key ref.Val) ref.Val {
	_, found := m.Find(key)
	return types.Bool(found)
}

// Size implements traits.Sizer.
func (m *headerMap) Size() ref.Val { return types.Int(len(m.names())) }

// Iterator implements traits.Iterable.
func (m *headerMap) Iterator() traits.Iterator { return &keyIterator{keys: m.names()} }

// ConvertToNative implements ref.Val (map[string]string).
func (m *headerMap) ConvertToNative(t reflect.Type) (any, error) {
	out := map[string]string{}
	for _, n := range m.names() {
		v, _ := m.Find(types.String(n))
		out[n] = string(v.(types.String))
	}
	if reflect.TypeOf(out).AssignableTo(t) {
		return out, nil
	}
	return nil, errors.New("headers: cannot convert to " + t.String())
}

// ConvertToType implements ref.Val.
func (m *headerMap) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return m
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t)
}

// Equal implements ref.Val.
func (m *headerMap) Equal(other ref.Val) ref.Val { return mapEqual(m, other) }

// Type implements ref.Val.
func (m *headerMap) Type() ref.Type { return types.MapType }

// Value implements ref.Val.
func (m *headerMap) Value() any {
	v, _ := m.ConvertToNative(reflect.TypeOf(map[string]string(nil)))
	return v
}
