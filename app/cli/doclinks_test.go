// README.md and docs/ are what the command line is used by: their links
// are checked here, beside the test that reads README's quick start.

package cli_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"hookbox/app/cli/clitest"
)

// mdLink finds the target of a Markdown link: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// anchors returns the GitHub anchors of a Markdown file's headings: lower
// case, punctuation dropped, spaces as hyphens, "-1", "-2"… on repeats.
func anchors(text string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.TrimLeft(line, "#")
		if h == "" || h[0] != ' ' {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(h)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// withoutCode removes fenced blocks and inline code, where brackets are
// not links.
func withoutCode(text string) string {
	var b strings.Builder
	fence := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
			continue
		}
		if !fence {
			b.WriteString(regexp.MustCompile("`[^`]*`").ReplaceAllString(line, ""))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Every relative link in README.md and docs/ points to a file that exists
// and, with a #fragment, to a heading of that file.
func TestDocLinks(t *testing.T) {
	root := clitest.Root(t)
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	texts := map[string]string{}
	read := func(path string) (string, bool) {
		if s, ok := texts[path]; ok {
			return s, true
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false
		}
		texts[path] = string(b)
		return string(b), true
	}
	for _, file := range files {
		text, ok := read(file)
		if !ok {
			t.Fatalf("cannot read %s", file)
		}
		for _, m := range mdLink.FindAllStringSubmatch(withoutCode(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
			}
			destText, ok := read(dest)
			if !ok {
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: link %q: no file %s", file, target, dest)
				}
				continue
			}
			if frag != "" && strings.HasSuffix(dest, ".md") && !anchors(destText)[frag] {
				t.Errorf("%s: link %q: %s has no heading #%s", file, target, dest, frag)
			}
		}
	}
}
