package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// hookbox is licensed under Apache-2.0 (LICENSE at the top of the
// repository). Every module its build and its tests use must carry a licence
// that lets hookbox be used, changed and shipped under it: the permissive
// ones, and MPL-2.0, whose copyleft is per file and holds only for changes to
// that module's own files, which hookbox uses unmodified. GPL, LGPL, AGPL,
// SSPL, a licence the test does not know and a module without a licence file
// fail, naming the module.

// licences are the licences the test recognises, by phrases of their text
// (lower case, white space collapsed), and whether hookbox may use them.
var licences = []struct {
	name    string
	phrases []string
	allowed bool
}{
	// AGPL and LGPL before GPL: their texts name the GPL too, and hide it.
	{"AGPL", []string{"gnu affero general public license"}, false},
	{"LGPL", []string{"gnu lesser general public license"}, false},
	{"GPL", []string{"gnu general public license"}, false},
	{"SSPL", []string{"server side public license"}, false},
	{"Apache-2.0", []string{"apache license", "version 2.0, january 2004"}, true},
	{"MPL-2.0", []string{"mozilla public license version 2.0"}, true},
	{"MIT", []string{"permission is hereby granted, free of charge, to any person obtaining a copy"}, true},
	{"BSD-3-Clause", []string{"redistribution and use in source and binary forms", "may be used to endorse or promote products derived from this software"}, true},
	{"BSD-2-Clause", []string{"redistribution and use in source and binary forms"}, true},
	{"ISC", []string{"permission to use, copy, modify, and", "for any purpose with or without fee is hereby granted"}, true},
	{"Unlicense", []string{"this is free and unencumbered software released into the public domain"}, true},
	{"CC0-1.0", []string{"cc0 1.0 universal"}, true},
}

// classifyLicence names the licences a licence file's text holds (a file may
// bundle several, as klauspost/compress's does); BSD-3-Clause hides
// BSD-2-Clause.
func classifyLicence(text string) []string {
	t := strings.ToLower(strings.Join(strings.Fields(text), " "))
	var names []string
	for _, l := range licences {
		all := true
		for _, p := range l.phrases {
			if !strings.Contains(t, p) {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		if l.name == "BSD-2-Clause" && slices.Contains(names, "BSD-3-Clause") {
			continue
		}
		if l.name == "GPL" && (slices.Contains(names, "AGPL") || slices.Contains(names, "LGPL")) {
			continue
		}
		names = append(names, l.name)
	}
	if slices.Contains(names, "MPL-2.0") {
		// MPL-2.0 names the GNU licences itself ("Secondary License"):
		// they are part of its text, not licences of the module.
		kept := names[:0]
		for _, n := range names {
			if n != "AGPL" && n != "LGPL" && n != "GPL" {
				kept = append(kept, n)
			}
		}
		names = kept
	}
	return names
}

func licenceAllowed(name string) bool {
	for _, l := range licences {
		if l.name == name {
			return l.allowed
		}
	}
	return false
}

// licenceFiles are the files at the top of dir that hold its licence.
func licenceFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		n := strings.ToUpper(e.Name())
		if e.Type().IsRegular() && (strings.HasPrefix(n, "LICENSE") || strings.HasPrefix(n, "LICENCE") || strings.HasPrefix(n, "COPYING") || n == "UNLICENSE") {
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	return files, nil
}

// licenceOf names the licences of the module in dir, from its licence files.
func licenceOf(dir string) ([]string, error) {
	files, err := licenceFiles(dir)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	var names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, n := range classifyLicence(string(b)) {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names, nil
}

func TestLicences(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to list the modules")
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		t.Fatalf("go list -m: %v", err)
	}
	root := strings.TrimSpace(string(out))

	t.Run("Own", func(t *testing.T) {
		names, err := licenceOf(root)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) != 1 || names[0] != "Apache-2.0" {
			t.Fatalf("hookbox's own licence: %v; want a LICENSE at %s with the Apache License 2.0", names, root)
		}
		b, err := os.ReadFile(filepath.Join(root, "LICENSE"))
		if err != nil {
			t.Fatal(err)
		}
		// The canonical text ends with the appendix; a LICENSE cut short is
		// not the licence.
		if !strings.Contains(string(b), "limitations under the License.") || !strings.Contains(string(b), "END OF TERMS AND CONDITIONS") {
			t.Fatal("LICENSE is not the whole Apache License 2.0")
		}
	})

	t.Run("Classify", func(t *testing.T) {
		// The refusals, on the first lines of the licences refused.
		for text, want := range map[string]string{
			"GNU GENERAL PUBLIC LICENSE\n Version 3, 29 June 2007":                            "GPL",
			"GNU AFFERO GENERAL PUBLIC LICENSE Version 3, 19 November 2007":                   "AGPL",
			"GNU LESSER GENERAL PUBLIC LICENSE Version 2.1, February 1999":                    "LGPL",
			"Server Side Public License VERSION 1, OCTOBER 16, 2018":                          "SSPL",
			"Mozilla Public License Version 2.0 ... GNU Affero General Public License":        "MPL-2.0",
			"Redistribution and use in source and binary forms, with or without modification": "BSD-2-Clause",
		} {
			got := classifyLicence(text)
			if len(got) != 1 || got[0] != want {
				t.Errorf("classifyLicence(%q) = %v, want %s", text, got, want)
			}
		}
		for _, n := range []string{"GPL", "AGPL", "LGPL", "SSPL", "unknown"} {
			if licenceAllowed(n) {
				t.Errorf("%s allowed", n)
			}
		}
	})

	t.Run("Dependencies", func(t *testing.T) {
		// The modules whose packages the build and the tests use, not every
		// module go.sum names.
		cmd := exec.Command("go", "list", "-deps", "-test", "-f",
			"{{with .Module}}{{if not .Main}}{{.Path}}@{{.Version}}\t{{with .Replace}}{{.Dir}}{{else}}{{.Dir}}{{end}}{{end}}{{end}}", "./...")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				t.Fatalf("go list -deps: %v\n%s", err, ee.Stderr)
			}
			t.Fatalf("go list -deps: %v", err)
		}
		dirs := map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			mod, dir, ok := strings.Cut(line, "\t")
			if ok {
				dirs[mod] = dir
			}
		}
		if len(dirs) == 0 {
			t.Fatal("go list -deps named no module")
		}
		mods := make([]string, 0, len(dirs))
		for m := range dirs {
			mods = append(mods, m)
		}
		sort.Strings(mods)
		count := map[string]int{}
		for _, m := range mods {
			dir := dirs[m]
			if dir == "" {
				t.Errorf("%s: not in the module cache (go mod download %s), its licence unread", m, m)
				continue
			}
			names, err := licenceOf(dir)
			switch {
			case err != nil:
				t.Errorf("%s: %v", m, err)
				continue
			case len(names) == 0:
				t.Errorf("%s: no licence file (LICENSE, LICENCE, COPYING…) in %s, or one the test does not recognise", m, dir)
				continue
			}
			for _, n := range names {
				count[n]++
				if !licenceAllowed(n) {
					t.Errorf("%s: %s does not allow hookbox's Apache-2.0 (allowed: Apache-2.0, MIT, BSD, ISC, MPL-2.0, Unlicense, CC0)", m, n)
				}
			}
			t.Logf("%s → %s", m, strings.Join(names, " + "))
		}
		var sum []string
		for n, c := range count {
			sum = append(sum, n+" "+strconv.Itoa(c))
		}
		sort.Strings(sum)
		t.Logf("%d modules: %s", len(mods), strings.Join(sum, ", "))
	})
}
