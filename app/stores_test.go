package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"hookbox/app"
)

// maxRoleMethods bounds a store role: a role that grows past it is two.
const maxRoleMethods = 15

// storeNames are the store roles whose names do not end in "Store".
var storeNames = map[string]bool{"Store": true, "Outbox": true, "ReadModel": true, "Lifecycle": true}

// iface is an interface type declared in package app, as parsed.
type iface struct {
	file     string
	methods  []string // declared in the interface itself
	embedded []string // interfaces of package app it embeds
	foreign  []string // embedded types of other packages (a store role has none)
}

// parseIfaces reads every interface type of package app's non-test files.
func parseIfaces(t *testing.T) map[string]iface {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]iface{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				it, ok := ts.Type.(*ast.InterfaceType)
				if !ok {
					continue
				}
				in := iface{file: name}
				for _, m := range it.Methods.List {
					switch {
					case len(m.Names) > 0:
						for _, n := range m.Names {
							in.methods = append(in.methods, n.Name)
						}
					default:
						if id, ok := m.Type.(*ast.Ident); ok {
							in.embedded = append(in.embedded, id.Name)
						} else {
							in.foreign = append(in.foreign, string(src[fset.Position(m.Type.Pos()).Offset:fset.Position(m.Type.End()).Offset]))
						}
					}
				}
				out[ts.Name.Name] = in
			}
		}
	}
	return out
}

// methodSet is name's methods, its embedded interfaces' included, once each.
func methodSet(all map[string]iface, name string, into map[string]bool) {
	in := all[name]
	for _, m := range in.methods {
		into[m] = true
	}
	for _, e := range in.embedded {
		methodSet(all, e, into)
	}
}

// isStore reports whether name is one of the store's roles: it is named as
// one, or app.Store embeds it.
func isStore(all map[string]iface, name string) bool {
	if storeNames[name] || strings.HasSuffix(name, "Store") {
		return true
	}
	var in func(string) bool
	in = func(n string) bool {
		for _, e := range all[n].embedded {
			if e == name || in(e) {
				return true
			}
		}
		return false
	}
	return in("Store")
}

// TestStoreRoles holds the store's roles to what app/stores.go says of
// them: all of them in that file (stores*.go), none past 15 methods,
// app.Store the sum of them, and no caller outside the stores reaching a
// wider role than the one it was given by a type assertion.
func TestStoreRoles(t *testing.T) {
	all := parseIfaces(t)
	if _, ok := all["Store"]; !ok {
		t.Fatal("no app.Store interface found")
	}
	var names []string
	for name := range all {
		if isStore(all, name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		in := all[name]
		if !strings.HasPrefix(in.file, "stores") {
			t.Errorf("%s is declared in app/%s: the store's roles live together in app/stores.go", name, in.file)
		}
		if len(in.foreign) > 0 {
			t.Errorf("%s embeds %v: a role is made of the domain's types only", name, in.foreign)
		}
		if name == "Store" {
			continue
		}
		ms := map[string]bool{}
		methodSet(all, name, ms)
		if len(ms) > maxRoleMethods {
			t.Errorf("%s has %d methods, more than %d: split it into narrower roles", name, len(ms), maxRoleMethods)
		}
		if len(ms) == 0 {
			t.Errorf("%s has no methods", name)
		}
	}

	// app.Store is the sum of the roles, and the parse above saw it whole.
	sum := map[string]bool{}
	methodSet(all, "Store", sum)
	if len(all["Store"].methods) > 0 {
		t.Errorf("app.Store declares %v itself: every method belongs to a role", all["Store"].methods)
	}
	st := reflect.TypeFor[app.Store]()
	if got, want := st.NumMethod(), len(sum); got != want {
		t.Errorf("app.Store has %d methods, its roles as parsed %d", got, want)
	}
	for i := range st.NumMethod() {
		if m := st.Method(i).Name; !sum[m] {
			t.Errorf("app.Store's %s is in no role parsed", m)
		}
	}

	roles := map[string]bool{}
	for _, name := range names {
		roles[name] = true
	}
	for _, a := range storeAssertions(t, "..", roles, sum) {
		t.Errorf("%s: a type assertion reaches a store role (%s): take the role you need as a parameter or field instead", a.at, a.to)
	}
}

// assertion is a type assertion found in the source.
type assertion struct{ at, to string }

// storeAssertions finds, in the non-test files of the module under root
// (the stores' own packages aside), the type assertions to a store role: by
// its name, to an interface literal with a store's method, or to an
// interface of the package's own that has one or embeds a role.
func storeAssertions(t *testing.T, root string, roles, methods map[string]bool) []assertion {
	t.Helper()
	fset := token.NewFileSet()
	files := map[string]*ast.File{} // by path
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if rel, _ := filepath.Rel(root, path); rel == "storage" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files[path] = f
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// storeLike reports whether an interface literal has a store's method
	// or embeds a role of app.
	storeLike := func(it *ast.InterfaceType) string {
		for _, m := range it.Methods.List {
			for _, n := range m.Names {
				if methods[n.Name] {
					return n.Name
				}
			}
			if sel, ok := m.Type.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "app" && roles[sel.Sel.Name] {
					return "app." + sel.Sel.Name
				}
			}
		}
		return ""
	}
	// local are the interfaces each package declares that are store-like,
	// by directory and name.
	local := map[string]map[string]string{}
	for path, f := range files {
		dir := filepath.Dir(path)
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				if it, ok := ts.Type.(*ast.InterfaceType); ok {
					if what := storeLike(it); what != "" {
						if local[dir] == nil {
							local[dir] = map[string]string{}
						}
						local[dir][ts.Name.Name] = what
					}
				}
			}
		}
	}

	var found []assertion
	for path, f := range files {
		dir := filepath.Dir(path)
		ast.Inspect(f, func(n ast.Node) bool {
			ta, ok := n.(*ast.TypeAssertExpr)
			if !ok || ta.Type == nil {
				return true
			}
			to := ""
			switch ty := ta.Type.(type) {
			case *ast.Ident:
				if roles[ty.Name] && filepath.Base(dir) == "app" {
					to = ty.Name
				} else if what := local[dir][ty.Name]; what != "" {
					to = ty.Name + ", with " + what
				}
			case *ast.SelectorExpr:
				if x, ok := ty.X.(*ast.Ident); ok && x.Name == "app" && roles[ty.Sel.Name] {
					to = "app." + ty.Sel.Name
				}
			case *ast.InterfaceType:
				if what := storeLike(ty); what != "" {
					to = "interface{ " + what + " … }"
				}
			}
			if to != "" {
				found = append(found, assertion{at: fset.Position(ta.Pos()).String(), to: to})
			}
			return true
		})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].at < found[j].at })
	return found
}
