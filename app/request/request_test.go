package request_test

import (
	"strings"
	"testing"

	"hookbox/app/request"
)

func TestSafeNext(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"/", "/"},
		{"/events?source=gh&status=dead", "/events?source=gh&status=dead"},
		{"/events/12", "/events/12"},
		{"/%0d%0aSet-Cookie:%20x=y", "/%0d%0aSet-Cookie:%20x=y"}, // escapes stay escapes: a path here
		{"", "/"},
		{"events", "/"},
		{"//evil.example", "/"},
		{"/\\evil.example", "/"},
		{"\\/evil.example", "/"},
		{"/a\\b", "/"},
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/\r\nSet-Cookie: x=y", "/"},
		{"/\nX: y", "/"},
		{"/\t/evil.example/x", "/"},
		{"/\x00", "/"},
		{"/\x7f", "/"},
		{"/a b", "/"},
		{"/caf\xc3\xa9", "/"},
		{"/" + strings.Repeat("a", 2048), "/"},
	} {
		if got := request.SafeNext(tt.in); got != tt.want {
			t.Errorf("SafeNext(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzSafeNext: whatever a query string or form holds, the redirect is "/"
// or the value itself, a path of this site with no byte that could end a
// header or that a browser would drop or reinterpret.
func FuzzSafeNext(f *testing.F) {
	for _, s := range []string{"/", "/events?x=1", "//x", "/\\x", "/\t/x", "/\r\nA: b", "https://x", "/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got := request.SafeNext(in)
		if got != "/" && got != in {
			t.Fatalf("SafeNext(%q) = %q", in, got)
		}
		if !strings.HasPrefix(got, "/") || strings.HasPrefix(got, "//") || strings.ContainsAny(got, "\\ ") {
			t.Fatalf("SafeNext(%q) = %q: not a path of this site", in, got)
		}
		for i := 0; i < len(got); i++ {
			if got[i] < 0x21 || got[i] > 0x7e {
				t.Fatalf("SafeNext(%q) = %q holds byte %#x", in, got, got[i])
			}
		}
	})
}
