package app

import (
	"bytes"
	"time"
	"unicode/utf8"
)

// Body search (issue 29): the events whose stored body contains a text,
// ASCII letters in either case, other bytes as they are. A merchant asked
// "did order #1004 reach the POS?" types 1004 and finds it.

// MinSearch is the fewest characters a body search takes: a shorter one
// matches nearly everything and cannot use PostgreSQL's trigram index.
const MinSearch = 3

// MaxSearch bounds a body search text, in bytes: an order number, an
// email or a phrase fits many times over.
const MaxSearch = 1024

// SearchBudget bounds one body search: on a store that has no index for
// it (bbolt) the events it examines and its time, whichever comes first
// ends the page, which then says how far it looked
// (EventSearch.SearchedUntil); on PostgreSQL the time alone, as the
// statement_timeout of its statements.
type SearchBudget struct {
	Events int
	Time   time.Duration
}

// DefaultSearchBudget is the budget of a bbolt body search: a page comes
// back within about a second, and "search further" goes on from there.
var DefaultSearchBudget = SearchBudget{Events: 200000, Time: time.Second}

// SearchCheckBytes and SearchCheckEvents say how often a body search that
// reads bodies (bbolt, replay by query) looks at its deadline and its
// caller: after this many bytes of events or this many events, whichever
// comes first. The matcher reads ~1 GB/s at worst, so a look comes at
// least every few milliseconds.
const (
	SearchCheckBytes  = 1 << 20
	SearchCheckEvents = 256
)

// CheckSearch refuses a body search text that is too short to search
// for, or longer than MaxSearch.
func CheckSearch(q string) error {
	if len(q) > MaxSearch {
		return Errorf(EINVALID, "q is %d bytes long: a body search takes at most %d", len(q), MaxSearch)
	}
	if utf8.RuneCountInString(q) < MinSearch {
		return Errorf(EINVALID, "q %q: a body search needs at least %d characters", q, MinSearch)
	}
	return nil
}

// Search is a body search text made ready to look for: its ASCII letters
// in lower case, and the table of its borders that lets In read each byte
// of a body once (Knuth–Morris–Pratt). Make one per query (NewSearch),
// then call In per body: In allocates nothing, and costs O(body + needle)
// whatever the two hold (issue 42: the naive comparison at each place
// where the first byte matched cost body × needle, 26.7 s for one search
// of 40 bodies of 1 MB).
type Search struct {
	needle []byte
	// fail[k] is the length of the longest proper prefix of needle[:k+1]
	// that is also its suffix: where a partial match of k+1 bytes goes on
	// after a mismatch.
	fail []int16
	// anchor is the index in needle of its first byte that is not a
	// letter (-1: none): it has one form, so one IndexByte finds the
	// places a match can start, and In skips to them.
	anchor int
}

// NewSearch prepares q (which CheckSearch accepts) for In.
func NewSearch(q string) Search {
	s := Search{needle: LowerASCII([]byte(q)), anchor: -1}
	for i, c := range s.needle {
		if !isLower(c) {
			s.anchor = i
			break
		}
	}
	s.fail = make([]int16, len(s.needle))
	k := 0
	for i := 1; i < len(s.needle); i++ {
		for k > 0 && s.needle[i] != s.needle[k] {
			k = int(s.fail[k-1])
		}
		if s.needle[i] == s.needle[k] {
			k++
		}
		s.fail[i] = int16(k)
	}
	return s
}

// Needle is the search text with its ASCII letters in lower case.
func (s Search) Needle() []byte { return s.needle }

// LowerASCII lowers the ASCII letters of b in place and returns it.
func LowerASCII(b []byte) []byte {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return b
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }

// In reports whether body contains the search text, ASCII letters in
// either case.
func (s Search) In(body []byte) bool {
	at, _ := s.index(body)
	return at >= 0
}

// index returns where the search text first starts in body (-1: nowhere)
// and the steps it took: bytes skipped by IndexByte, bytes compared, and
// fallbacks after a mismatch, each at most len(body), so at most
// 3·len(body) in all.
func (s Search) index(body []byte) (at, steps int) {
	n := s.needle
	m := len(n)
	if m == 0 {
		return 0, 0
	}
	first := n[0]
	letter := isLower(first)
	up := first - ('a' - 'A')
	// The next places of first in either case at or after i, found by
	// IndexByte (fast), each looked for again only once i has passed it:
	// the two scans read the body once each. len(body): none left.
	nextLo, nextUp, nextAnchor := -1, -1, -1
	k := 0
	for i := 0; i < len(body); i++ {
		if k == 0 && s.anchor >= 0 {
			// No partial match: none starts before the next place of the
			// anchor, less its index (its bytes before are no anchor).
			if a := i + s.anchor; nextAnchor < a {
				if j := bytes.IndexByte(body[min(a, len(body)):], n[s.anchor]); j >= 0 {
					nextAnchor = a + j
				} else {
					nextAnchor = len(body) + m
				}
			}
			if next := nextAnchor - s.anchor; next > i {
				steps += min(next, len(body)) - i
				if len(body)-next < m {
					return -1, steps
				}
				i = next
			}
		}
		if k == 0 {
			// No partial match: skip to the next place the first byte is.
			if nextLo < i {
				if j := bytes.IndexByte(body[i:], first); j >= 0 {
					nextLo = i + j
				} else {
					nextLo = len(body)
				}
			}
			next := nextLo
			if letter {
				if nextUp < i {
					if j := bytes.IndexByte(body[i:], up); j >= 0 {
						nextUp = i + j
					} else {
						nextUp = len(body)
					}
				}
				next = min(next, nextUp)
			}
			steps += next - i
			if len(body)-next < m {
				return -1, steps
			}
			i = next
		}
		c := body[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		steps++
		for k > 0 && c != n[k] {
			k = int(s.fail[k-1])
			steps++
		}
		if c == n[k] {
			k++
		}
		if k == m {
			return i + 1 - m, steps
		}
	}
	return -1, steps
}
