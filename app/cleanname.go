// Names from requests: a login's user name, a user or token named in an
// API call, reach the audit log, the logs and the pages before anyone
// knows they name nobody. They are kept short and harmless to show.

package app

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxAccessName bounds the names of users and tokens.
const MaxAccessName = 64

// MaxShownName is how many bytes of a name from a request are stored and
// shown: the longest valid user or token name (ValidAccessName).
const MaxShownName = MaxAccessName

// nameCut ends a name CleanName had to cut.
const nameCut = "…"

// CleanName returns a name taken from a request as it may be stored,
// logged and shown: every control or format character (Unicode Cc and
// Cf: bidi overrides and isolates, zero-width characters, the byte order
// mark), line or paragraph separator (Zl, Zp) and byte that is not UTF-8
// replaced by U+FFFD, then cut to MaxShownName bytes at a character
// boundary, with "…" (within the bound) where it was cut. A valid user or
// token name comes back as it is.
func CleanName(s string) string {
	if len(s) <= MaxShownName && plainASCII(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s { // a byte that is not UTF-8 comes as RuneError
		if hiddenRune(r) {
			r = utf8.RuneError
		}
		if b.Len()+utf8.RuneLen(r) > MaxShownName {
			return cutName(b.String())
		}
		b.WriteRune(r)
	}
	return b.String()
}

// cutName ends s, a cleaned name that was too long, with nameCut, keeping
// it within MaxShownName bytes.
func cutName(s string) string {
	end := MaxShownName - len(nameCut)
	for end > 0 && end < len(s) && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:min(end, len(s))] + nameCut
}

// hiddenRune reports whether r changes or hides how the text around it
// reads (a control, format or separator character) or stands for bytes
// that are not UTF-8.
func hiddenRune(r rune) bool {
	return r == utf8.RuneError || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
}

// plainASCII reports whether s holds only printable ASCII.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
