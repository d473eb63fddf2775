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

// SearchBudget bounds the events one body search examines on a store that
// has no index for it (bbolt): whichever comes first ends the page, which
// then says how far it looked (EventSearch.SearchedUntil).
type SearchBudget struct {
	Events int
	Time   time.Duration
}

// DefaultSearchBudget is the budget of a bbolt body search: a page comes
// back within about a second, and "search further" goes on from there.
var DefaultSearchBudget = SearchBudget{Events: 200000, Time: time.Second}

// EventSearch is a page of a body search.
type EventSearch struct {
	Rows []EventSummary
	// Next is the cursor of the next page (EventQuery.Before), 0 when the
	// search has looked at every event its query can select.
	Next uint64
	// SearchedUntil, when not zero, says the search stopped at its budget:
	// it looked at the events received from the start of the page back to
	// this time (the oldest it examined), and no further; Next goes on.
	SearchedUntil time.Time
	// Searched counts the events the page examined (0 for a store that
	// searches by an index).
	Searched int
}

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
// in lower case. Make one per query (NewSearch), then call In per body:
// In allocates nothing.
type Search struct {
	needle []byte
	anchor int // index in needle of the byte looked for first
}

// NewSearch prepares q (which CheckSearch accepts) for In.
func NewSearch(q string) Search {
	s := Search{needle: LowerASCII([]byte(q))}
	// Look for a byte that is not a letter first when there is one: it
	// has one form, so one fast IndexByte finds its places.
	for i, c := range s.needle {
		if !isLower(c) {
			s.anchor = i
			break
		}
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
	n := s.needle
	if len(n) == 0 {
		return true
	}
	a := n[s.anchor]
	if !isLower(a) {
		for from := s.anchor; from < len(body); {
			i := bytes.IndexByte(body[from:], a)
			if i < 0 {
				return false
			}
			at := from + i - s.anchor
			if at+len(n) <= len(body) && s.equalAt(body, at) {
				return true
			}
			from += i + 1
		}
		return false
	}
	// Every byte is a letter: follow both forms of the first one.
	lo, up := a, a-('a'-'A')
	nextLo, nextUp := bytes.IndexByte(body, lo), bytes.IndexByte(body, up)
	for nextLo >= 0 || nextUp >= 0 {
		var at int
		if nextUp < 0 || nextLo >= 0 && nextLo < nextUp {
			at = nextLo
			if j := bytes.IndexByte(body[at+1:], lo); j >= 0 {
				nextLo = at + 1 + j
			} else {
				nextLo = -1
			}
		} else {
			at = nextUp
			if j := bytes.IndexByte(body[at+1:], up); j >= 0 {
				nextUp = at + 1 + j
			} else {
				nextUp = -1
			}
		}
		if at+len(n) > len(body) {
			return false
		}
		if s.equalAt(body, at) {
			return true
		}
	}
	return false
}

// equalAt reports whether body[at:] starts with the needle, folding the
// body's ASCII upper-case letters.
func (s Search) equalAt(body []byte, at int) bool {
	for k, c := range s.needle {
		b := body[at+k]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != c {
			return false
		}
	}
	return true
}
