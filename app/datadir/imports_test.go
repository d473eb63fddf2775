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

// The domain knows no technology: config loading (TOML) is the ring
// hookbox/app/config, which returns *app.Config; the scheduler is built in
// hookbox/app/cli; metrics go to Prometheus through hookbox/app/metrics;
// HTTP is the web package's, each database its store's. go list says
// whether one of them came back into the domain.
func TestImports_DomainWithoutTOML(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the imports")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "hookbox/app").Output()
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []struct{ module, where string }{
		{"github.com/BurntSushi/toml", "TOML is read in hookbox/app/config"},
		{"github.com/robfig/cron", "the scheduler is built in hookbox/app/cli"},
		{"github.com/prometheus", "Prometheus is hookbox/app/metrics's"},
		{"github.com/gofiber", "Fiber is hookbox/app/web's"},
		{"github.com/valyala/fasthttp", "fasthttp is hookbox/app/web's"},
		{"go.etcd.io/bbolt", "bbolt is hookbox/storage/bboltstore's"},
		{"github.com/jackc/pgx", "PostgreSQL is hookbox/storage/postgres's"},
	}
	for _, p := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if p == f.module || strings.HasPrefix(p, f.module+"/") {
				t.Errorf("hookbox/app depends on %s: %s, not the domain's", p, f.where)
			}
		}
	}
}
