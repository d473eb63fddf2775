package datadir_test

import (
	"os/exec"
	"strings"
	"testing"
)

// datadir sits under the domain and beside the stores, both of which
// import it: it must import nothing of hookbox's, and it must not bring
// a technology into the domain (go list says what it imports).
func TestImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the imports")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "hookbox/app/datadir").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		switch {
		case p == "hookbox/app/datadir":
		case strings.HasPrefix(p, "hookbox/"):
			t.Errorf("datadir depends on %s: the domain and the stores import it, so it imports nothing of hookbox's", p)
		case !strings.HasPrefix(p, "golang.org/x/sys/"):
			t.Errorf("datadir depends on %s: only the standard library and golang.org/x/sys", p)
		}
	}
}

// The domain knows no file format: config loading (TOML) is the ring
// hookbox/app/config, which returns *app.Config. go list says whether
// TOML came back into the domain.
func TestImports_DomainWithoutTOML(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the imports")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "hookbox/app").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/BurntSushi/toml" || strings.HasPrefix(p, "github.com/BurntSushi/toml/") {
			t.Errorf("hookbox/app depends on %s: TOML is read in hookbox/app/config, not in the domain", p)
		}
		if strings.HasPrefix(p, "github.com/robfig/cron") {
			t.Errorf("hookbox/app depends on %s: the scheduler is built in hookbox/app/cli, not in the domain", p)
		}
	}
}
