package app

import "unicode/utf8"

// Glob matches s against a pattern where '*' stands for any run of
// characters (slashes included) and '?' for one character (one UTF-8
// sequence, or one byte that is not part of one). Other bytes match
// themselves.
//
// It takes at most (len(pattern)+2) × (len(s)+2) steps, linear in the
// topic for a given pattern: a backtracking matcher took C(len(s), stars)
// steps, minutes for `*?*?*?Z` against a topic of 4,000 characters.
func Glob(pattern, s string) bool {
	ok, _ := glob(pattern, s)
	return ok
}

// glob is Glob that also counts its steps, for the test of its cost. After
// a star only the latest star needs retrying (research.swtch.com/glob):
// whatever an earlier star would absorb in addition, the latest one can
// absorb just as well. Each retry moves the latest star's restart point
// one character on, so there are at most len(s)+1 retries of at most
// len(pattern)+1 steps each.
func glob(pattern, s string) (bool, int) {
	steps := 0
	px, sx := 0, 0
	// Where to resume when the characters after the latest star fail:
	// that star absorbs one more character of s (restart 0: no star yet).
	starPx, restart := 0, 0
	for px < len(pattern) || sx < len(s) {
		steps++
		if px < len(pattern) {
			switch c := pattern[px]; c {
			case '*':
				starPx = px
				restart = sx + runeLen(s[sx:])
				px++
				continue
			case '?':
				if sx < len(s) {
					px++
					sx += runeLen(s[sx:])
					continue
				}
			default:
				if sx < len(s) && s[sx] == c {
					px++
					sx++
					continue
				}
			}
		}
		if restart > 0 && restart <= len(s) {
			px, sx = starPx+1, restart
			restart += runeLen(s[restart:])
			continue
		}
		return false, steps
	}
	return true, steps
}

// runeLen is the length of the character at the start of s: one UTF-8
// sequence, or one byte (also at the end of s, where the caller checks).
func runeLen(s string) int {
	if s == "" {
		return 1
	}
	_, n := utf8.DecodeRuneInString(s)
	return n
}
