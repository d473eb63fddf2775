package ui_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"hookbox/ui"
)

// jsonDepth is the deepest nesting of the valid JSON src, by the
// standard library's decoder.
func jsonDepth(t testing.TB, src []byte) int {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return deepest
		}
		if err != nil {
			t.Fatalf("decode %q: %v", src, err)
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			deepest = max(deepest, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}

var indentSeeds = []string{
	`{}`, `[]`, `[ ]`, `{ }`, `null`, ` 1 `, "\"str\"  \n", `"a b\"c\\"`, `[[[[]]]]`, `{"a":{}}`, `[1,[],{}]`,
	`{"a":[1,2,{"b":null}],"c":"x\"y\\","d":-1.5e3,"e":true}`,
	"\t{\r\n \"k\" :\t[ 1 , 2 ] }\n\n",
	"[\"\xff\xfe\", \"é\", \"\\u00e9\"]",
	strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65),
	strings.Repeat(`{"a":`, 70) + "1" + strings.Repeat("}", 70),
	`}]`, `[1,`, `"unterminated`, `{"a" 1}`,
}

// TestIndentJSON matches json.Indent within the bounds and gives up past
// them.
func TestIndentJSON(t *testing.T) {
	for _, s := range indentSeeds {
		checkIndent(t, []byte(s), ui.MaxIndentDepth, ui.MaxIndentOut)
	}
	t.Run("Depth", func(t *testing.T) {
		in := []byte(strings.Repeat("[", 65) + strings.Repeat("]", 65))
		if _, ok := ui.IndentJSON(in, 64, 1<<20); ok {
			t.Fatal("65 deep indented with a bound of 64")
		}
		if out, ok := ui.IndentJSON(in[1:len(in)-1], 64, 1<<20); !ok || len(out) == 0 {
			t.Fatal("64 deep not indented with a bound of 64")
		}
	})
	t.Run("Size", func(t *testing.T) {
		in := []byte(`[` + strings.Repeat(`1,`, 999) + `1]`)
		var want bytes.Buffer
		json.Indent(&want, in, "", "  ")
		if out, ok := ui.IndentJSON(in, 64, want.Len()); !ok || !bytes.Equal(out, want.Bytes()) {
			t.Fatalf("output of exactly the bound: ok %v", ok)
		}
		if _, ok := ui.IndentJSON(in, 64, want.Len()-1); ok {
			t.Fatal("output one byte over the bound accepted")
		}
	})
}

// checkIndent holds indentJSON to json.Indent: for valid JSON, the same
// bytes when the nesting and the output are within the bounds, and false
// only when one of them is passed; for anything else, no panic and no
// output past the bound.
func checkIndent(t *testing.T, src []byte, maxDepth, maxOut int) {
	t.Helper()
	out, ok := ui.IndentJSON(src, maxDepth, maxOut)
	if ok && len(out) > maxOut {
		t.Fatalf("IndentJSON(%q, %d, %d): %d bytes, over the bound", src, maxDepth, maxOut, len(out))
	}
	if !json.Valid(src) {
		return
	}
	var want bytes.Buffer
	if err := json.Indent(&want, src, "", "  "); err != nil {
		t.Fatalf("json.Indent(%q): %v", src, err)
	}
	depth := jsonDepth(t, src)
	within := depth <= maxDepth && want.Len() <= maxOut
	switch {
	case ok && !bytes.Equal(out, want.Bytes()):
		t.Fatalf("IndentJSON(%q) =\n%q\njson.Indent gives\n%q", src, out, want.Bytes())
	case ok != within:
		t.Fatalf("IndentJSON(%q, depth bound %d, size bound %d): ok %v; depth %d, json.Indent %d bytes", src, maxDepth, maxOut, ok, depth, want.Len())
	}
}

func FuzzIndent(f *testing.F) {
	for _, s := range indentSeeds {
		f.Add([]byte(s), uint8(ui.MaxIndentDepth), uint16(4096))
		f.Add([]byte(s), uint8(2), uint16(20))
	}
	f.Fuzz(func(t *testing.T, src []byte, depth uint8, size uint16) {
		checkIndent(t, src, int(depth%80), int(size))
	})
}

// TestViewBody: what the event page shows of a body stays within its
// bounds, and in little time, whatever the body.
func TestViewBody(t *testing.T) {
	elem := strings.Repeat("[", 2000) + strings.Repeat("]", 2000)
	nested := `{"deep":[` + strings.TrimSuffix(strings.Repeat(elem+",", 126), ",") + `]}`
	small := `{"id":1,"items":[{"sku":"a/b & <c>"}]}`
	var smallIndented bytes.Buffer
	json.Indent(&smallIndented, []byte(small), "", "  ")
	wide := `[` + strings.Repeat(`1,`, 120000) + `1]` // 240 KB, indented 600 KB
	for _, tt := range []struct {
		name        string
		body        string
		text        string // "" when not checked
		pretty, cut bool
		why         bool
	}{
		{"SmallJSON", small, smallIndented.String(), true, false, false},
		{"NotJSON", "a=1&b=2", "a=1&b=2", false, false, false},
		{"Nested2000", nested, nested[:ui.MaxRawShown], false, true, true},
		{"Depth65", strings.Repeat("[", 65) + strings.Repeat("]", 65), strings.Repeat("[", 65) + strings.Repeat("]", 65), false, false, true},
		{"WideIndented", wide, wide, false, false, true},
		{"LargeText", strings.Repeat("x", 300<<10), strings.Repeat("x", ui.MaxRawShown), false, true, false},
		{"CutBeforeCharacter", strings.Repeat("x", ui.MaxRawShown-1) + "é" + "tail", strings.Repeat("x", ui.MaxRawShown-1), false, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			text, pretty, cut, why := ui.ViewBody([]byte(tt.body))
			took := time.Since(start)
			if tt.text != "" && text != tt.text {
				t.Errorf("text: %d bytes %.40q…; want %d bytes %.40q…", len(text), text, len(tt.text), tt.text)
			}
			if pretty != tt.pretty || cut != tt.cut || (why != "") != tt.why {
				t.Errorf("pretty %v, cut %v, why %q; want %v, %v, a reason %v", pretty, cut, why, tt.pretty, tt.cut, tt.why)
			}
			if len(text) > ui.MaxIndentOut || !utf8.ValidString(text) && utf8.ValidString(tt.body) {
				t.Errorf("text of %d bytes (valid UTF-8 %v)", len(text), utf8.ValidString(text))
			}
			if took > time.Second {
				t.Errorf("took %v", took)
			}
		})
	}
}
