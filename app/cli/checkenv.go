package cli

import (
	"fmt"
	"io"
	"strings"

	"hookbox/app/config"
)

// checkMentions answers `hookbox check -env` and `check -sources`: what
// the config names, one line each, read from the TOML without resolving
// any variable, so that install.sh can list the variables in hookbox.env
// (and the sources' URLs) before any of them is set.
//
//	-env      NAME<TAB>where (e.g. SHOPIFY_SECRET<TAB>[[source]] shop: secret_env)
//	-sources  NAME<TAB>PROVIDER
//
// A *_env value that is not a variable's name is named by its key on
// stderr, never shown.
func checkMentions(path string, env, sources bool, stdout, stderr io.Writer) int {
	m, err := config.ReadMentions(path)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if env {
		for _, e := range m.Env {
			fmt.Fprintf(stdout, "%s\t%s\n", e.Name, strings.Join(e.Where, "; "))
		}
		for _, where := range m.Skipped {
			fmt.Fprintf(stderr, "%s: %s: not an environment variable's name (letters, digits and _), or a secret in its place: left out\n", path, where)
		}
	}
	if sources {
		for _, s := range m.Sources {
			fmt.Fprintf(stdout, "%s\t%s\n", s.Name, s.Provider)
		}
	}
	return 0
}
