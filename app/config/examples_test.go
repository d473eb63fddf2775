package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"hookbox/app/config"
)

// commentedTOML is a commented line of config.toml that is TOML once its
// "# " goes: a table header or a key.
var commentedTOML = regexp.MustCompile(`^# (\[\[?[a-z]+\]\]?$|[a-z_]+ = )`)

// Every commented example of the repository's config.toml loads once its
// lines are uncommented and the variables it names are set: a reader who
// uncomments one (with what it needs from another: a route its source and
// destination, Square its public_url) gets no error from hookbox check. An
// example is a run of such lines between blank lines.
func TestConfigToml_Examples(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	var blocks [][]int
	var cur []int
	for i, l := range lines {
		switch {
		case strings.TrimSpace(l) == "":
			if cur != nil {
				blocks, cur = append(blocks, cur), nil
			}
		case commentedTOML.MatchString(l):
			cur = append(cur, i)
		}
	}
	if cur != nil {
		blocks = append(blocks, cur)
	}
	if len(blocks) < 15 {
		t.Fatalf("found %d commented examples in config.toml, expected one per provider and more", len(blocks))
	}
	// with returns the example holding the line want.
	with := func(want string) []int {
		for _, b := range blocks {
			for _, i := range b {
				if lines[i] == want {
					return b
				}
			}
		}
		t.Fatalf("config.toml has no commented line %q", want)
		return nil
	}
	varName := regexp.MustCompile(`"([A-Z][A-Z0-9_]+)"`)
	for _, b := range blocks {
		first := lines[b[0]]
		t.Run(fmt.Sprintf("line %d", b[0]+1), func(t *testing.T) {
			if strings.HasPrefix(first, "# cert_file") {
				t.Skip("names certificate files that exist only on a server")
			}
			uncomment := append([]int(nil), b...)
			text := ""
			for _, i := range b {
				text += lines[i] + "\n"
			}
			if strings.Contains(text, `provider = "square"`) {
				uncomment = append(uncomment, with(`# public_url = "https://hooks.example.com"`)...)
			}
			if strings.Contains(text, "# [[route]]") {
				uncomment = append(uncomment, with(`# provider = "shopify"`)...)
				uncomment = append(uncomment, with(`# name = "pos"`)...)
			}
			out := append([]string(nil), lines...)
			vars := map[string]string{}
			for _, i := range uncomment {
				out[i] = strings.TrimPrefix(lines[i], "# ")
				for _, m := range varName.FindAllStringSubmatch(out[i], -1) {
					vars[m[1]] = exampleValue(m[1])
				}
			}
			if _, err := config.Parse("config.toml", strings.Join(out, "\n"), env(vars)); err != nil {
				t.Errorf("uncommented at line %d, with %v set: %v", b[0]+1, keys(vars), err)
			}
		})
	}
}

// exampleValue is a value of the right form for an example's variable.
func exampleValue(name string) string {
	switch {
	case strings.Contains(name, "DATABASE"):
		return "postgres://hookbox:pw@127.0.0.1:5432/hookbox?sslmode=disable"
	case strings.Contains(name, "SMTP"):
		return "smtp://hookbox:pw@smtp.example.com:587"
	case strings.HasSuffix(name, "_URL"):
		return "https://hooks.slack.example/T000/B000"
	default:
		return "whsec_aG9va2JveC1leGFtcGxlLXNlY3JldC0xMjM0NQ=="
	}
}

func keys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
