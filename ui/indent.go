package ui

import (
	"encoding/json"
	"unicode/utf8"
)

// Bounds of what the event page shows of a body. A body is indented only
// when it is JSON of at most maxIndentIn bytes, nested at most
// maxIndentDepth deep, whose indented text fits in maxIndentOut bytes;
// otherwise its first maxRawShown bytes are shown as they are. Unbounded,
// a 504 KB body nested 2,000 deep made a page of 1 GB (issue 24). Even
// escaped for HTML (at most 5 bytes for 1) the body takes at most about
// 1.5 MiB of a page.
const (
	maxIndentIn    = 256 << 10
	maxIndentDepth = 64
	maxIndentOut   = 512 << 10
	maxRawShown    = 256 << 10
)

// indentJSON indents src as json.Indent(dst, src, "", "  ") does, in one
// pass that tracks the nesting depth, whether it is inside a string, and
// the output's size. It gives up, returning false, as soon as the nesting
// passes maxDepth or the output maxOut bytes, so its time is linear in
// len(src) and its memory bounded by maxOut. src must be valid JSON
// (json.Valid); for anything else the output is unspecified but still
// bounded.
func indentJSON(src []byte, maxDepth, maxOut int) ([]byte, bool) {
	out := make([]byte, 0, min(maxOut, len(src)+len(src)/2+16))
	var (
		open       int  // containers open
		level      int  // indentation level, as json.Indent's depth
		needIndent bool // after '[' or '{': a newline unless the container is empty
		inString   bool
		escaped    bool // inside a string, after a backslash
		started    bool // a byte of the value was written
	)
	newline := func() bool {
		if len(out)+1+2*level > maxOut {
			return false
		}
		out = append(out, '\n')
		for range level {
			out = append(out, ' ', ' ')
		}
		return true
	}
	for _, c := range src {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			if len(out) >= maxOut {
				return nil, false
			}
			out = append(out, c)
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			// json.Indent drops white space before the value and inside
			// it, and keeps what follows the value.
			if started && open == 0 {
				if len(out) >= maxOut {
					return nil, false
				}
				out = append(out, c)
			}
			continue
		}
		started = true
		if needIndent && c != ']' && c != '}' {
			needIndent = false
			level++
			if !newline() {
				return nil, false
			}
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if open++; open > maxDepth {
				return nil, false
			}
			needIndent = true
		case ',':
			if len(out) >= maxOut {
				return nil, false
			}
			out = append(out, c)
			if !newline() {
				return nil, false
			}
			continue
		case ':':
			if len(out)+2 > maxOut {
				return nil, false
			}
			out = append(out, c, ' ')
			continue
		case '}', ']':
			// Never below zero, whatever src: a stray closer in invalid
			// input would make the newline's bound check count negative
			// indentation (found by FuzzIndent).
			open = max(open-1, 0)
			if needIndent {
				needIndent = false // an empty container stays [] or {}
			} else {
				level = max(level-1, 0)
				if !newline() {
					return nil, false
				}
			}
		}
		if len(out) >= maxOut {
			return nil, false
		}
		out = append(out, c)
	}
	return out, true
}

// bodyView is a body as the event page shows it.
type bodyView struct {
	Text string
	// Pretty: Text is the body indented. Otherwise it is the body as
	// stored, cut to its first maxRawShown bytes when Cut.
	Pretty bool
	Cut    bool
	// Why says why a JSON body is not indented ("" when it is, or is not
	// JSON).
	Why string
}

// viewBody returns what the event page shows of body, in time linear in
// its size and memory bounded by the limits above.
func viewBody(body []byte) bodyView {
	var why string
	switch {
	case len(body) > maxIndentIn:
		if len(body) > 0 && (body[0] == '{' || body[0] == '[') {
			why = "larger than 256 KiB"
		}
	case json.Valid(body):
		if out, ok := indentJSON(body, maxIndentDepth, maxIndentOut); ok {
			return bodyView{Text: string(out), Pretty: true}
		}
		why = "nested deeper than 64 or over 512 KiB indented"
	}
	if len(body) <= maxRawShown {
		return bodyView{Text: string(body), Why: why}
	}
	n := maxRawShown
	for i := 0; i < utf8.UTFMax && n > 0 && !utf8.RuneStart(body[n]); i++ {
		n-- // cut before a character, not inside it
	}
	return bodyView{Text: string(body[:n]), Cut: true, Why: why}
}
