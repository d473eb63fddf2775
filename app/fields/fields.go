// Package fields renders the small templates hookbox's config uses to name
// an event's id, topic or entity key: literal text with fields such as
// {header.X-Shopify-Shop-Domain}, {body.customer.id}, {source} and {topic}.
package fields

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrMissing means a field the template names is absent from the event.
var ErrMissing = errors.New("field missing")

// Header gives case-insensitive access to header values.
type Header interface {
	Get(name string) string
}

// Input is what a template is rendered against.
type Input struct {
	Body   []byte
	Header Header
	Source string
	Topic  string
}

type kind uint8

const (
	kindText kind = iota
	kindHeader
	kindBody
	kindSource
	kindTopic
)

type part struct {
	kind kind
	text string   // literal text or header name
	path []string // JSON path for kindBody
}

// Template is a parsed template, safe for concurrent use.
type Template struct {
	src   string
	parts []part
	body  bool // whether any part reads the body
}

// maxLen bounds a rendered value so a hostile body cannot make keys huge.
const maxLen = 512

// Parse parses s. Fields are {header.Name}, {body.a.b.c}, {source}, {topic};
// everything else is literal text.
func Parse(s string) (*Template, error) {
	t := &Template{src: s}
	rest := s
	for rest != "" {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			if strings.IndexByte(rest, '}') >= 0 {
				return nil, fmt.Errorf("unmatched '}' in %q", s)
			}
			t.parts = append(t.parts, part{kind: kindText, text: rest})
			break
		}
		if i > 0 {
			if strings.IndexByte(rest[:i], '}') >= 0 {
				return nil, fmt.Errorf("unmatched '}' in %q", s)
			}
			t.parts = append(t.parts, part{kind: kindText, text: rest[:i]})
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return nil, fmt.Errorf("unclosed '{' in %q", s)
		}
		field := rest[i+1 : i+j]
		p, err := parseField(field)
		if err != nil {
			return nil, fmt.Errorf("%w in %q", err, s)
		}
		if p.kind == kindBody {
			t.body = true
		}
		t.parts = append(t.parts, p)
		rest = rest[i+j+1:]
	}
	if len(t.parts) == 0 {
		return nil, errors.New("empty template")
	}
	return t, nil
}

func parseField(f string) (part, error) {
	switch {
	case f == "source":
		return part{kind: kindSource}, nil
	case f == "topic":
		return part{kind: kindTopic}, nil
	case strings.HasPrefix(f, "header."):
		name := f[len("header."):]
		if name == "" || strings.ContainsAny(name, " \t{}:") {
			return part{}, fmt.Errorf("bad header name in {%s}", f)
		}
		return part{kind: kindHeader, text: name}, nil
	case strings.HasPrefix(f, "body."):
		path := strings.Split(f[len("body."):], ".")
		for _, p := range path {
			if p == "" {
				return part{}, fmt.Errorf("empty path element in {%s}", f)
			}
		}
		return part{kind: kindBody, path: path}, nil
	}
	return part{}, fmt.Errorf("unknown field {%s} (use header.Name, body.path, source or topic)", f)
}

// Headers lists the names of the headers t reads ({header.Name}), in
// order; none for a nil template.
func (t *Template) Headers() []string {
	if t == nil {
		return nil
	}
	var names []string
	for _, p := range t.parts {
		if p.kind == kindHeader {
			names = append(names, p.text)
		}
	}
	return names
}

// String returns the template's source text.
func (t *Template) String() string { return t.src }

// Render renders t against in. It returns ErrMissing (wrapped with the field)
// when a field is absent or empty, or the body is not JSON where a body
// field is named.
func (t *Template) Render(in Input) (string, error) {
	var doc any
	if t.body {
		dec := json.NewDecoder(bytes.NewReader(in.Body))
		dec.UseNumber()
		if err := dec.Decode(&doc); err != nil {
			return "", fmt.Errorf("body is not JSON: %w", ErrMissing)
		}
	}
	var b strings.Builder
	for _, p := range t.parts {
		var v string
		switch p.kind {
		case kindText:
			v = p.text
		case kindSource:
			v = in.Source
		case kindTopic:
			v = in.Topic
		case kindHeader:
			if in.Header != nil {
				v = in.Header.Get(p.text)
			}
		case kindBody:
			v = lookup(doc, p.path)
		}
		if v == "" && p.kind != kindText {
			return "", fmt.Errorf("%s: %w", fieldName(p), ErrMissing)
		}
		b.WriteString(v)
		if b.Len() > maxLen {
			return "", fmt.Errorf("rendered value longer than %d bytes", maxLen)
		}
	}
	return b.String(), nil
}

func fieldName(p part) string {
	switch p.kind {
	case kindSource:
		return "{source}"
	case kindTopic:
		return "{topic}"
	case kindHeader:
		return "{header." + p.text + "}"
	}
	return "{body." + strings.Join(p.path, ".") + "}"
}

// lookup walks path through a decoded JSON document; array elements are
// addressed by their decimal index. Scalars render as their JSON text;
// objects, arrays and null count as missing.
func lookup(doc any, path []string) string {
	cur := doc
	for _, key := range path {
		switch v := cur.(type) {
		case map[string]any:
			cur = v[key]
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(v) {
				return ""
			}
			cur = v[i]
		default:
			return ""
		}
	}
	switch v := cur.(type) {
	case string:
		return v
	case json.Number:
		return v.String()
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}
