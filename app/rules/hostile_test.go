package rules_test

import (
	"runtime"
	"strings"
	"testing"

	"hookbox/app"
)

// Hostile bodies of 1 MiB (the default max_body_bytes) cost a bounded
// amount of memory, whatever the filter reads of them: at most
// maxValues members and elements are decoded per event (each 40-200
// bytes), so the worst here, 131,000 small objects or 175,000 keys,
// allocates about 10 MiB (the test's own copy of the body included)
// and then fails ("more than 65536 values"), where it made 44 MiB
// without the cap.
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
				got := after.TotalAlloc - before.TotalAlloc
				if got > 16*size {
					t.Errorf("%s: %d MiB allocated for a 1 MiB body", e, got>>20)
				}
			}
		})
	}
}

// A body with more values than an event may decode is an error where it
// is read, not null: it is JSON, only too big to look into.
func TestBody_ErrTooManyValues(t *testing.T) {
	body := "{" + strings.Repeat(`"k":1,`, 70000) + `"z":1}`
	for _, e := range []string{`body.z == 1`, `body == null`} {
		_, err := mustFilter(t, e).Match(&app.RuleInput{Body: []byte(body)})
		if err == nil || !strings.Contains(err.Error(), "body: more than 65536 values to decode") {
			t.Errorf("%s: %v", e, err)
		}
	}
	list := `{"a": [` + strings.Repeat("1,", 70000) + `1], "b": 2}`
	ok, err := mustFilter(t, `body.b == 2`).Match(&app.RuleInput{Body: []byte(list)})
	if !ok || err != nil {
		t.Errorf("a member after a long list nobody reads: %v, %v", ok, err)
	}
	if _, err := mustFilter(t, `size(body.a) > 0`).Match(&app.RuleInput{Body: []byte(list)}); err == nil || !strings.Contains(err.Error(), "more than 65536") {
		t.Errorf("reading the long list: %v", err)
	}
}
