package app

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestCleanName(t *testing.T) {
	long := strings.Repeat("a", 100)
	for _, tt := range []struct{ name, in, want string }{
		{"valid name", "ann.o-k_1@x", "ann.o-k_1@x"},
		{"empty", "", ""},
		{"64 bytes", long[:64], long[:64]},
		{"65 bytes", long[:65], long[:61] + "…"},
		{"right-to-left override", "ann\u202egnp.exe", "ann\ufffdgnp.exe"},
		{"bidi isolates", "\u2066a\u2069\u2067b\u2068c", "\ufffda\ufffd\ufffdb\ufffdc"},
		{"zero width and BOM", "a\u200bb\u200dc\ufeff", "a\ufffdb\ufffdc\ufffd"},
		{"controls", "a\nb\r\x00\x1b[31mc\x7f\u0085", "a\ufffdb\ufffd\ufffd\ufffd[31mc\ufffd\ufffd"},
		{"separators", "a\u2028b\u2029", "a\ufffdb\ufffd"},
		{"not UTF-8", "a\xffb\xc3", "a\ufffdb\ufffd"},
		{"letters kept", "Jürgen Ops 管理", "Jürgen Ops 管理"},
		{"HTML kept (the page escapes it)", "<b>x</b>", "<b>x</b>"},
		// A three-byte rune that would cross byte 61 is left out whole.
		{"cut at a rune boundary", strings.Repeat("a", 60) + "管理者", strings.Repeat("a", 60) + "…"},
		{"cut after replacing", strings.Repeat("\u202e", 30), strings.Repeat("\ufffd", 20) + "…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := CleanName(tt.in); got != tt.want {
				t.Errorf("CleanName(%q) = %q; want %q", tt.in, got, tt.want)
			}
		})
	}
}

// A 1,000-byte name full of right-to-left overrides, as the red team sent
// it, is cut to 64 bytes without one left.
func TestCleanName_RedTeam(t *testing.T) {
	in := strings.Repeat("admin\u202e", 125)[:1000]
	got := CleanName(in)
	if len(got) > MaxShownName || strings.ContainsRune(got, '\u202e') || !strings.HasPrefix(got, "admin\ufffd") {
		t.Errorf("CleanName = %q (%d bytes)", got, len(got))
	}
}

// FuzzCleanName: whatever a request sends, the result is valid UTF-8 of at
// most MaxShownName bytes with no control, format or separator
// character; cleaning it again changes nothing; a valid user name is kept.
func FuzzCleanName(f *testing.F) {
	for _, s := range []string{"", "ann", "a\u202eb", strings.Repeat("é", 40), "\xff\xfe", "管理者\u2066", strings.Repeat("x", 70)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := CleanName(s)
		if len(got) > MaxShownName || !utf8.ValidString(got) {
			t.Fatalf("CleanName(%q) = %q: %d bytes, valid %v", s, got, len(got), utf8.ValidString(got))
		}
		for _, r := range got {
			if r != utf8.RuneError && unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp) {
				t.Fatalf("CleanName(%q) = %q holds %U", s, got, r)
			}
		}
		if again := CleanName(got); again != got {
			t.Fatalf("CleanName(%q) = %q, then %q", s, got, again)
		}
		if ValidAccessName("user", s) == nil && got != s {
			t.Fatalf("valid name %q became %q", s, got)
		}
	})
}
