package app_test

import (
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"hookbox/app"
)

// Patterns that make a backtracking matcher try every way of splitting the
// topic between the stars: the steps stay within (len(pattern)+2) ×
// (len(topic)+2), linear in the topic for a given pattern. (A backtracking
// matcher takes C(n, stars) steps: seconds for `*?*?*?*?*?Z` and 60
// characters, ages for longer ones.)
func TestGlob_StepsLinearInTopic(t *testing.T) {
	for _, tt := range []struct{ pattern, topic string }{
		{"*?*?*?Z", strings.Repeat("a", 60)},
		{"*?*?*?*?*?Z", strings.Repeat("a", 60)},
		{"*a*a*a*a*a*a*b", strings.Repeat("a", 60)},
		{"*?*?*?Z", strings.Repeat("a", 4000)},
		{"orders/*/paid*?x", "orders/" + strings.Repeat("p", 2000)},
	} {
		ok, steps := app.GlobSteps(tt.pattern, tt.topic)
		bound := (len(tt.pattern) + 2) * (len(tt.topic) + 2)
		t.Logf("Glob(%q, %d characters) = %v in %d steps (bound %d)", tt.pattern, len(tt.topic), ok, steps, bound)
		if ok {
			t.Errorf("Glob(%q, %q…) matched", tt.pattern, tt.topic[:10])
		}
		if steps > bound {
			t.Errorf("Glob(%q, %d characters) took %d steps, more than %d", tt.pattern, len(tt.topic), steps, bound)
		}
	}
}

// BenchmarkGlob_Adversarial is the pattern of issue 15 against a topic of
// header size.
func BenchmarkGlob_Adversarial(b *testing.B) {
	topic := strings.Repeat("a", 16<<10)
	for b.Loop() {
		if app.Glob("*?*?*?Z", topic) {
			b.Fatal("matched")
		}
	}
}

// FuzzGlob compares Glob on small inputs with two references, for any
// pattern that is valid UTF-8 (a pattern comes from the TOML config, which
// is UTF-8 by its spec: the parser refuses an invalid byte; a topic, from
// the sender, can be anything): path.Match, which has the same '*' and '?'
// where there is no '/' (it stops stars at slashes) and no '[' or '\\'
// (its classes and escapes); and a regular expression, '*' as (?s:.*) and
// '?' as (?s:.). path.Match is asked only about topics of single-byte
// characters: its star steps through bytes, so it splits a character that
// Glob's star, as documented, absorbs whole (FuzzGlob found "*\x98"
// matching "Ø", 0xC3 0x98, and "*??" matching the three bytes of "ꯏ");
// the regular expression, which steps through characters as Glob does,
// checks every topic.
func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"orders/*", "orders/create"}, {"*?*?*?Z", "aaaaaaaaaaZ"}, {"*.created", "customer.created"},
		{"?", "é"}, {"*?", "\xff"}, {"a*b*c", "abbbcbc"}, {"**", ""}, {"*a", "ba"}, {"?*?", "é"},
		{"orders/?aid", "orders/paid"}, {"*/*", "a/b/c"}, {"", "x"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 16 || len(s) > 32 {
			return
		}
		got := app.Glob(pattern, s)
		if !strings.ContainsAny(pattern+s, "/[\\") && utf8.ValidString(pattern) && singleBytes(s) {
			want, err := path.Match(pattern, s)
			if err == nil && got != want {
				t.Fatalf("Glob(%q, %q) = %v, path.Match says %v", pattern, s, got, want)
			}
		}
		if utf8.ValidString(pattern) {
			var re strings.Builder
			re.WriteString("^")
			for _, r := range pattern {
				switch r {
				case '*':
					re.WriteString("(?s:.*)")
				case '?':
					re.WriteString("(?s:.)")
				default:
					re.WriteString(regexp.QuoteMeta(string(r)))
				}
			}
			re.WriteString("$")
			if want := regexp.MustCompile(re.String()).MatchString(s); got != want {
				t.Fatalf("Glob(%q, %q) = %v, %s says %v", pattern, s, got, re.String(), want)
			}
		}
	})
}

// A star absorbs whole characters: a pattern byte that is not a character
// of its own never matches inside one (FuzzGlob found path.Match does).
func TestGlob_WholeCharacters(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*\x98", "Ø", false}, {"*Ø", "aØ", true}, {"?", "Ø", true}, {"??", "Ø", false}, {"*\xff", "a\xff", true},
	} {
		if got := app.Glob(c.pattern, c.s); got != c.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", c.pattern, c.s, got, c.want)
		}
	}
}

// singleBytes reports whether every character of s is one byte: ASCII, or
// bytes that begin no UTF-8 sequence.
func singleBytes(s string) bool {
	for len(s) > 0 {
		_, n := utf8.DecodeRuneInString(s)
		if n > 1 {
			return false
		}
		s = s[1:]
	}
	return true
}
