package rules_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"hookbox/app"
	"hookbox/app/rules"
)

// fuzzExprs are expressions that walk a hostile body every way they can:
// fields, sizes, comprehensions, conversions, the whole body out again.
var fuzzExprs = []string{
	`body.a == 1`,
	`has(body.a) && body.a.b.c == "x"`,
	`size(body) > 0`,
	`body.exists(k, k.startsWith("a"))`,
	`body.all(k, string(body[k]) != "")`,
	`body[0][0][0] == 1`,
	`double(body.n) > 1.0 && string(body.id).size() > 2`,
	`body.items.map(i, i.x).size() > 0`,
	`body.items.all(x, body.items.all(y, body.items.all(z, x == y || y == z)))`,
	`body == null`,
	`headers["content-type"].contains("json")`,
	`body.?a.?b.orValue(0) == 0`,
}

var fuzzTransforms = []string{
	`body`,
	`{"text": string(body.id) + " " + body.a}`,
	`body.items.map(i, {"k": i})`,
	`body.s.replace("a", "aa").replace("a", "aa").replace("a", "aa")`,
}

// FuzzRules runs hostile bodies through every expression above, and
// hostile expressions through the compiler: nothing panics, every
// evaluation ends in a value or an error, and a transform's body stays
// within its bound.
func FuzzRules(f *testing.F) {
	for _, s := range []string{
		`{"a": 1}`, `[[[[1]]]]`, `{"id": 820982911946154508, "n": "1.5"}`,
		`{"a": {"b": {"c": "x"}}, "items": [1, 2, 3]}`,
		"{\"a\": \"\xff\xfe\"}", `{"a": 1e999999}`, `{"a": -0}`, `{"a": "\ud800"}`,
		`{"items": [` + strings.Repeat(`{"x": [1, 2]},`, 50) + `1]}`,
		strings.Repeat("[", 5000), `{"s": "` + strings.Repeat("a", 200) + `"}`,
		`{"a":1,"a":2,"":3}`, `{"a"}`, `{,}`, `"\u0000"`, `  1  `,
	} {
		f.Add([]byte(s), `body.a == 1`)
	}
	f.Add([]byte(`{}`), strings.Repeat("[", 300))
	f.Add([]byte(`{}`), `body.a.b.c.d.e.f == 1 || `+strings.Repeat("x", 100))
	var filters []app.Filter
	for _, e := range fuzzExprs {
		filters = append(filters, mustFilter(f, e))
	}
	var transforms []app.Transform
	for _, e := range fuzzTransforms {
		tr, err := rules.NewTransform(e)
		if err != nil {
			f.Fatal(err)
		}
		transforms = append(transforms, tr)
	}
	whole, err := rules.NewTransform(`body`)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte, expr string) {
		in := &app.RuleInput{Body: body, Header: []app.HeaderField{{Name: "Content-Type", Value: "application/json"}}}
		for _, fl := range filters {
			_, err := fl.Match(in)
			if err != nil && strings.Contains(err.Error(), "internal error") {
				t.Fatalf("%s: %v", fl, err)
			}
		}
		const max = 4096
		for _, tr := range transforms {
			out, _, err := tr.Apply(in, max)
			if err == nil && len(out) > max {
				t.Fatalf("%s: %d bytes over the bound %d", tr, len(out), max)
			}
			if err != nil && strings.Contains(err.Error(), "internal error") {
				t.Fatalf("%s: %v", tr, err)
			}
		}
		// Where encoding/json calls the body valid, the body a transform
		// gives back is the same value: the lazy parser reads what every
		// other parser would (the last of duplicate keys, U+FFFD for
		// invalid UTF-8, every digit of a large integer as a number).
		if json.Valid(body) {
			// (a string comes back as text, a number or bool is not a body)
			out, ct, err := whole.Apply(in, 1<<20)
			if err == nil && ct == rules.ContentTypeJSON && !sameJSON(t, body, out) {
				t.Fatalf("body %q came back as %q", body, out)
			}
		}
		// A hostile expression compiles or is refused; if it compiles it
		// runs within the cost limit.
		if fl, err := rules.NewFilter(expr); err == nil {
			if _, err := fl.Match(in); err != nil && strings.Contains(err.Error(), "internal error") {
				t.Fatalf("%q: %v", expr, err)
			}
		}
	})
}

// sameJSON reports whether a and b decode to the same value, numbers
// compared as float64 (a transform writes 1e2 as 100).
func sameJSON(t *testing.T, a, b []byte) bool {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("decode %q: %v", a, err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&vb); err != nil {
		t.Fatalf("the transform wrote invalid JSON %q: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}
