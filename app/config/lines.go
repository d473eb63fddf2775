// Where each key of a config file is written: TOML's decoder keeps no
// line for a key of an array of tables ([[source]]), so the file is read
// again here, line by line, for the errors' file:line.

package config

import (
	"fmt"
	"regexp"
	"strings"
)

// lineIndex maps a key's path ("server.listen", "source[1].provider",
// "source[1]" for the table's header) to its line, from 1.
type lineIndex map[string]int

// tableName matches the " (name)" a validator's key carries after a table's
// index: source[1] (shop).provider is at source[1].provider.
var tableName = regexp.MustCompile(` \([^)]*\)`)

// indexIndex matches a list element's index at the end of a key:
// route[0].to[1] is written on route[0].to's line.
var indexIndex = regexp.MustCompile(`\[\d+\]$`)

// line returns where key (as a validator names it) is written: the key's
// own line, else its table's or list's, else 0.
func (ix lineIndex) line(key string) int {
	p := tableName.ReplaceAllString(key, "")
	for p != "" {
		if n, ok := ix[p]; ok {
			return n
		}
		if loc := indexIndex.FindStringIndex(p); loc != nil {
			p = p[:loc[0]]
			continue
		}
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return 0
		}
		p = p[:i]
	}
	return 0
}

// indexLines reads data's table headers and keys. It knows TOML enough
// to skip the inside of multi-line strings and arrays; a line it cannot
// place is left out, and an error on it goes without a line.
func indexLines(data string) lineIndex {
	ix := lineIndex{}
	arrays := map[string]int{} // an array of tables' path → how many so far
	prefix := ""
	var ml string // the closing quotes of a multi-line string we are in
	depth := 0    // open brackets of a value that spans lines
	for i, line := range strings.Split(data, "\n") {
		n := i + 1
		if ml != "" || depth > 0 {
			ml, depth = scanValue(line, ml, depth)
			continue
		}
		t := strings.TrimSpace(line)
		switch {
		case t == "" || t[0] == '#':
			continue
		case strings.HasPrefix(t, "[["):
			end := strings.Index(t, "]]")
			if end < 0 {
				continue
			}
			p := resolve(splitKey(t[2:end]), arrays)
			k := fmt.Sprintf("%s[%d]", p, arrays[p])
			arrays[p]++
			prefix = k
			setLine(ix, k, n)
			continue
		case t[0] == '[':
			end := strings.IndexByte(t, ']')
			if end < 0 {
				continue
			}
			prefix = resolve(splitKey(t[1:end]), arrays)
			setLine(ix, prefix, n)
			continue
		}
		eq := keyEnd(t)
		if eq < 0 {
			continue
		}
		k := strings.Join(splitKey(t[:eq]), ".")
		if prefix != "" {
			k = prefix + "." + k
		}
		setLine(ix, k, n)
		ml, depth = scanValue(t[eq+1:], "", 0)
	}
	return ix
}

func setLine(ix lineIndex, k string, n int) {
	if _, ok := ix[k]; !ok {
		ix[k] = n
	}
}

// resolve turns a header's parts into a path: a part that names an array
// of tables means its latest element ([destination.headers] after the
// second [[destination]] is destination[1].headers).
func resolve(parts []string, arrays map[string]int) string {
	p := ""
	for i, part := range parts {
		if p != "" {
			p += "."
		}
		p += part
		if c := arrays[p]; c > 0 && i < len(parts)-1 {
			p = fmt.Sprintf("%s[%d]", p, c-1)
		}
	}
	return p
}

// splitKey splits a dotted key, quoted parts unquoted.
func splitKey(s string) []string {
	var parts []string
	for _, p := range strings.Split(s, ".") {
		parts = append(parts, strings.Trim(strings.TrimSpace(p), `"'`))
	}
	return parts
}

// keyEnd returns the index of the '=' after a key, outside quotes, or -1.
func keyEnd(t string) int {
	var q byte
	for i := 0; i < len(t); i++ {
		c := t[i]
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '"' || c == '\'':
			q = c
		case c == '=':
			return i
		case c == '#':
			return -1
		}
	}
	return -1
}

// scanValue reads the rest of a value from s: it returns the closing
// quotes of a multi-line string left open, and the brackets left open.
func scanValue(s, ml string, depth int) (string, int) {
	for i := 0; i < len(s); i++ {
		if ml != "" {
			if strings.HasPrefix(s[i:], ml) {
				i += len(ml) - 1
				ml = ""
			} else if s[i] == '\\' && ml == `"""` {
				i++
			}
			continue
		}
		switch c := s[i]; {
		case strings.HasPrefix(s[i:], `"""`) || strings.HasPrefix(s[i:], `'''`):
			ml = s[i : i+3]
			i += 2
		case c == '"' || c == '\'':
			for i++; i < len(s) && s[i] != c; i++ {
				if c == '"' && s[i] == '\\' {
					i++
				}
			}
		case c == '[' || c == '{':
			depth++
		case c == ']' || c == '}':
			depth--
		case c == '#':
			return ml, depth
		}
	}
	return ml, max(depth, 0)
}
