package app_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// The layers of hookbox, as docs/DESIGN.md draws them ("The packages, and
// what each may import"), checked against what go list says each package
// depends on (transitively, and with its tests where a rule says so). One
// place for every rule: a rule broken names the arrow and why it is
// forbidden.

// tech is the technology the domain must not know, with the ring that owns it.
var tech = []struct{ path, why string }{
	{"github.com/gofiber/fiber", "the Fiber edge is hookbox/app/web"},
	{"github.com/valyala/fasthttp", "the HTTP client and server live in their technology packages (the sender, app/web)"},
	{"go.etcd.io/bbolt", "bbolt is a store: hookbox/storage/bboltstore"},
	{"github.com/jackc/pgx", "PostgreSQL is a store: hookbox/storage/postgres"},
	{"github.com/BurntSushi/toml", "TOML is read in hookbox/app/config, which returns *app.Config"},
	{"github.com/robfig/cron", "the scheduler is built in hookbox/app/cli"},
	{"github.com/prometheus", "metrics go through a small domain interface; the Prometheus adapter is outside the domain"},
	{"cel.dev/cel-go", "CEL is compiled in hookbox/app/rules; the domain sees only app.Filter and app.Transform"},
	{"github.com/emersion/go-smtp", "email goes out through hookbox/app/mail; the domain hands it an app.AlertMessage"},
}

// services are the packages of the services that use only the domain
// (docs/DESIGN.md): each may import app and its leaves, nothing else of
// hookbox's.
var services = []string{"hookbox/app/upstream", "hookbox/app/stream", "hookbox/app/alert", "hookbox/app/sweep", "hookbox/app/backup", "hookbox/app/receive", "hookbox/app/replay", "hookbox/app/access", "hookbox/app/dispatch"}

// stores are the packages that each hold one storage technology.
var stores = []string{"hookbox/storage/bboltstore", "hookbox/storage/postgres"}

// pkgDeps is what go list says of one package or test variant.
type pkgDeps struct {
	path string   // import path without the " [x.test]" suffix
	test bool     // a test variant: "x [x.test]", "x_test [x.test]" or "x.test"
	deps []string // transitive, non-standard, suffixes stripped
}

// listDeps runs go list over the whole module, tests included.
func listDeps(t *testing.T) []pkgDeps {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the imports")
	}
	cmd := exec.Command("go", "list", "-test", "-f", "{{.ImportPath}}\t{{.ForTest}}\t{{join .Deps \" \"}}", "hookbox/...")
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go list: %v\n%s", err, msg)
	}
	var pkgs []pkgDeps
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		p := pkgDeps{path: strip(f[0]), test: f[1] != "" || strings.HasSuffix(f[0], ".test")}
		p.path = strings.TrimSuffix(p.path, ".test")
		for _, d := range strings.Fields(f[2]) {
			if d = strip(d); strings.Contains(strings.SplitN(d, "/", 2)[0], ".") || strings.HasPrefix(d, "hookbox") {
				p.deps = append(p.deps, d)
			}
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// strip drops go list's " [x.test]" suffix of a test variant.
func strip(p string) string {
	if i := strings.IndexByte(p, ' '); i >= 0 {
		return p[:i]
	}
	return p
}

// under reports whether dep is pkg or one of its sub-packages.
func under(dep, pkg string) bool {
	return dep == pkg || strings.HasPrefix(dep, pkg+"/")
}

// find returns the variants of pkg (tests too when withTests), failing the
// test when pkg is absent: a rule about a package that moved must move too.
func find(t *testing.T, pkgs []pkgDeps, pkg string, withTests bool) []pkgDeps {
	t.Helper()
	var got []pkgDeps
	for _, p := range pkgs {
		if (p.path == pkg || p.path == pkg+"_test") && (withTests || !p.test) {
			got = append(got, p)
		}
	}
	if len(got) == 0 {
		t.Fatalf("go list shows no package %s: update this test and docs/DESIGN.md with the move", pkg)
	}
	return got
}

// forbid fails on every variant of pkg that depends on something under bad.
func forbid(t *testing.T, pkgs []pkgDeps, pkg string, withTests bool, bad, why string) {
	t.Helper()
	seen := map[string]bool{}
	for _, p := range find(t, pkgs, pkg, withTests) {
		for _, d := range p.deps {
			if under(d, bad) && !seen[p.path] {
				seen[p.path] = true // one line per arrow, not one per sub-package
				t.Errorf("forbidden arrow %s → %s (via %s): %s", p.path, bad, d, why)
			}
		}
	}
}

func TestLayers(t *testing.T) {
	pkgs := listDeps(t)

	t.Run("DomainKnowsNoTechnology", func(t *testing.T) {
		for _, x := range tech {
			t.Run(strings.TrimPrefix(x.path, "github.com/"), func(t *testing.T) {
				forbid(t, pkgs, "hookbox/app", false, x.path, "the domain knows no technology; "+x.why)
			})
		}
	})

	t.Run("NoStoreImportsAnother", func(t *testing.T) {
		tech := map[string]string{"hookbox/storage/bboltstore": "go.etcd.io/bbolt", "hookbox/storage/postgres": "github.com/jackc/pgx"}
		for _, s := range stores {
			for _, o := range stores {
				if s == o {
					continue
				}
				why := "a store imports the domain, never another store"
				forbid(t, pkgs, s, true, o, why)
				forbid(t, pkgs, s, true, tech[o], why+" (nor its technology)")
			}
		}
	})

	t.Run("ConformanceSuiteIsNeutral", func(t *testing.T) {
		why := "storetest checks every store through the neutral interfaces; each store's own tests bring the store in"
		for _, bad := range []string{"hookbox/storage/bboltstore", "hookbox/storage/postgres", "go.etcd.io/bbolt", "github.com/jackc/pgx"} {
			forbid(t, pkgs, "hookbox/storage/storetest", true, bad, why)
		}
	})

	t.Run("NeutralStorageHasNoStore", func(t *testing.T) {
		// hookbox/storage, while it holds the backend-neutral store
		// interface, must bring in no store; once the interfaces have moved
		// into the domain there is nothing left to check here.
		for _, p := range pkgs {
			if p.path != "hookbox/storage" && p.path != "hookbox/storage_test" {
				continue
			}
			for _, bad := range []string{"hookbox/storage/bboltstore", "hookbox/storage/postgres", "go.etcd.io/bbolt", "github.com/jackc/pgx"} {
				for _, d := range p.deps {
					if under(d, bad) {
						t.Errorf("forbidden arrow %s → %s: the neutral storage interface brings in no store technology", p.path, d)
					}
				}
			}
		}
	})

	t.Run("PageDoesNotImportWeb", func(t *testing.T) {
		forbid(t, pkgs, "hookbox/ui", true, "hookbox/app/web", "the status page renders the domain's read model; app/web serves the page, not the other way round")
	})

	t.Run("BenchDoesNotImportWeb", func(t *testing.T) {
		forbid(t, pkgs, "hookbox/app/bench", true, "hookbox/app/web", "the load tool measures the edge, it does not stand on it: app/cli hands it serve and the server's connection limits")
	})

	t.Run("OnlyMainImportsCLI", func(t *testing.T) {
		find(t, pkgs, "hookbox/app/cli", false)
		var bad []string
		for _, p := range pkgs {
			if p.path == "hookbox" || p.path == "hookbox/app/cli" || p.path == "hookbox/app/cli_test" {
				continue
			}
			for _, d := range p.deps {
				if d == "hookbox/app/cli" {
					bad = append(bad, p.path)
					break
				}
			}
		}
		sort.Strings(bad)
		for i, p := range bad {
			if i == 0 || bad[i-1] != p {
				t.Errorf("forbidden arrow %s → hookbox/app/cli: the command line is the outermost ring; only main (and its own tests) import it", p)
			}
		}
	})

	t.Run("CELOnlyThroughRules", func(t *testing.T) {
		// app/rules holds CEL; app/config (and what wires it) reaches CEL
		// only through it. app/rules itself knows only the domain.
		find(t, pkgs, "hookbox/app/rules", false)
		for _, p := range pkgs {
			if under(p.path, "hookbox/app/rules") || p.path == "hookbox/app/rules_test" {
				continue
			}
			cel, rules := false, false
			for _, d := range p.deps {
				cel = cel || under(d, "cel.dev/cel-go")
				rules = rules || d == "hookbox/app/rules"
			}
			if cel && !rules {
				t.Errorf("forbidden arrow %s → cel.dev/cel-go: expressions are compiled by hookbox/app/rules", p.path)
			}
		}
		for _, bad := range []string{"hookbox/app/config", "hookbox/app/web", "hookbox/ui", "hookbox/storage"} {
			forbid(t, pkgs, "hookbox/app/rules", false, bad, "the rules engine is a ring of the domain: it imports the domain, and config imports it")
		}
	})

	t.Run("ServicesUseOnlyTheDomain", func(t *testing.T) {
		// A service (the stream hub, alerts, the sweeper, backups) talks to
		// the world through the domain's interfaces: no ring (app/web, ui,
		// app/cli, app/config, app/httpsend…), no store, no other service.
		// app/cli wires them.
		domain := map[string]bool{"hookbox/app": true, "hookbox/app/provider": true, "hookbox/app/fields": true, "hookbox/app/datadir": true}
		for _, svc := range services {
			for _, p := range find(t, pkgs, svc, false) {
				for _, d := range p.deps {
					if strings.HasPrefix(d, "hookbox") && !domain[d] {
						t.Errorf("forbidden arrow %s → %s: a service imports only the domain and its leaves (app, app/provider, app/fields, app/datadir); app/cli wires the rest to it", p.path, d)
					}
				}
			}
			for _, x := range tech {
				forbid(t, pkgs, svc, false, x.path, "a service knows no technology; "+x.why)
			}
		}
	})

	t.Run("DataDirStandsAlone", func(t *testing.T) {
		for _, p := range find(t, pkgs, "hookbox/app/datadir", false) {
			for _, d := range p.deps {
				switch {
				case strings.HasPrefix(d, "hookbox"):
					t.Errorf("forbidden arrow %s → %s: the domain and the stores import datadir, so it imports nothing of hookbox's", p.path, d)
				case !under(d, "golang.org/x/sys"):
					t.Errorf("forbidden arrow %s → %s: datadir uses only the standard library and golang.org/x/sys", p.path, d)
				}
			}
		}
	})
}
