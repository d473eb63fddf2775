package storage_test

import (
	"os/exec"
	"strings"
	"testing"
)

// No store imports another: the PostgreSQL store and the conformance
// suite reach the bbolt store only through the neutral storage.Store, and
// storage itself brings in no storage technology (go list says what each
// depends on, its tests included).
func TestImports(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the imports")
	}
	forbidden := map[string][]string{
		"hookbox/storage":           {"hookbox/storage/bboltstore", "hookbox/storage/postgres", "go.etcd.io/bbolt", "github.com/jackc/pgx/v5"},
		"hookbox/storage/postgres":  {"hookbox/storage/bboltstore", "go.etcd.io/bbolt"},
		"hookbox/storage/storetest": {"hookbox/storage/bboltstore", "hookbox/storage/postgres", "go.etcd.io/bbolt", "github.com/jackc/pgx/v5"},
	}
	for pkg, bad := range forbidden {
		out, err := exec.Command("go", "list", "-deps", "-test", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, p := range strings.Fields(string(out)) {
			for _, b := range bad {
				if p == b || strings.HasPrefix(p, b+"/") {
					t.Errorf("%s depends on %s: a store imports the domain and storage, never another store", pkg, p)
				}
			}
		}
	}
}
