package rules_test

import (
	"runtime"
	"strings"
	"testing"

	"hookbox/app"
)

// Hostile bodies of 1 MiB (the default max_body_bytes) cost a bounded
// multiple of their size in memory, whatever the filter reads of them.
// The bound is what is measured, not what is wished: a body of 175,000
// keys or 131,000 small objects makes 40-44 MiB of allocations (each
// member is 40 bytes, each object about 190 with its slot in a list),
// most of it garbage of slices grown on the way. A cap on the values
// decoded per event would bound it regardless of the body; there is none
// yet.
func TestHostileBodies_MemoryBounded(t *testing.T) {
	const size = 1 << 20
	pad := func(prefix, unit, suffix string) string {
		n := (size - len(prefix) - len(suffix)) / len(unit)
		return prefix + strings.Repeat(unit, n) + suffix
	}
	bodies := map[string]string{
		"DeepArrays":  pad("", "[", ""),
		"DeepObjects": pad(`{"a":`, `{"a":`, ""),
		"LongArray":   pad(`{"a":[`, "1,", "1]}"),
		"ManyKeys":    pad(`{`, `"k":1,`, `"z":1}`),
		"ManyObjects": pad(`{"a":[`, `{"x":1},`, `{}]}`),
		"HugeNumber":  pad(`{"a":`, "9", "}"),
		"BadUTF8":     pad(`{"a":"`, "\xff\xfe", `"}`),
		"Escapes":     pad(`{"a":"`, `\u00e9`, `"}`),
	}
	exprs := []string{`size(body) > 0`, `has(body.a) && size(body.a) >= 0`, `body.a == body.a`, `string(body.a) != ""`}
	for name, body := range bodies {
		t.Run(name, func(t *testing.T) {
			for _, e := range exprs {
				f := mustFilter(t, e)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				f.Match(&app.RuleInput{Body: []byte(body)}) // an error is fine; a panic or a blow-up is not
				runtime.ReadMemStats(&after)
				if got := after.TotalAlloc - before.TotalAlloc; got > 48*size {
					t.Errorf("%s: %d MiB allocated for a 1 MiB body", e, got>>20)
				}
			}
		})
	}
}
