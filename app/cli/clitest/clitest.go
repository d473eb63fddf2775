// Package clitest builds the hookbox binary for the tests that run it (the
// end-to-end tests beside the command line): once per test process, into
// a temporary directory that Main removes when the tests are done.
package clitest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	rootOnce sync.Once
	root     string
	rootErr  error

	dirOnce sync.Once
	dir     string
	dirErr  error

	binOnce sync.Once
	bin     string
	binErr  error

	shippedOnce sync.Once
	shipped     string
	shippedErr  error
)

// Main runs the tests of m, removes what Binary and Shipped built, and
// exits with the tests' code. A package's TestMain calls it.
func Main(m *testing.M) {
	quickRaceExit()
	code := m.Run()
	if dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// quickRaceExit makes the binaries the tests run exit at once. A program
// built with -race sleeps a second at exit while other goroutines live
// (GORACE's atexit_sleep_ms, 1000 by default), and the tests run the
// binary hundreds of times under -race: `hookbox version` took 1.03 s,
// and 0.03 s without the sleep. Races found while a process runs are
// still reported, and still fail its exit code (66); only the last second
// after main returns goes unwatched. A GORACE that sets the sleep wins.
func quickRaceExit() {
	g := os.Getenv("GORACE")
	if !RaceEnabled || strings.Contains(g, "atexit_sleep_ms") {
		return
	}
	os.Setenv("GORACE", strings.TrimSpace(g+" atexit_sleep_ms=0"))
}

// Root returns the module's root directory: where go.mod, main.go,
// install.sh and config.toml are.
func Root(tb testing.TB) string {
	tb.Helper()
	rootOnce.Do(func() {
		wd, err := os.Getwd()
		if err != nil {
			rootErr = err
			return
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				root = d
				return
			}
			if filepath.Dir(d) == d {
				rootErr = fmt.Errorf("no go.mod above %s", wd)
				return
			}
		}
	})
	if rootErr != nil {
		tb.Fatal(rootErr)
	}
	return root
}

// Build runs go build in the module's root with args (flags such as
// -tags) and writes the binary to out; with RaceEnabled it adds -race, so
// that the binary is checked as the tests are.
func Build(tb testing.TB, out string, args ...string) {
	tb.Helper()
	if err := build(Root(tb), out, RaceEnabled, args...); err != nil {
		tb.Fatal(err)
	}
}

func build(root, out string, race bool, args ...string) error {
	args = append([]string{"build", "-o", out}, args...)
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", args, err, b)
	}
	return nil
}

// buildDir is the temporary directory the binaries are built into.
func buildDir() (string, error) {
	dirOnce.Do(func() { dir, dirErr = os.MkdirTemp("", "hookbox-e2e") })
	return dir, dirErr
}

// Binary returns the hookbox the tests run, built on the first call (with
// -race when the tests run with it).
func Binary(tb testing.TB) string {
	tb.Helper()
	r := Root(tb)
	binOnce.Do(func() {
		d, err := buildDir()
		if err != nil {
			binErr = err
			return
		}
		bin = filepath.Join(d, "hookbox")
		binErr = build(r, bin, RaceEnabled)
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return bin
}

// Shipped returns hookbox built as users get it: without -race, whose
// shadow memory and slowdown would say nothing about memory and latency
// bounds. Without -race it is Binary; under -race it is built once, beside
// it.
func Shipped(tb testing.TB) string {
	tb.Helper()
	if !RaceEnabled {
		return Binary(tb)
	}
	r := Root(tb)
	shippedOnce.Do(func() {
		d, err := buildDir()
		if err != nil {
			shippedErr = err
			return
		}
		shipped = filepath.Join(d, "hookbox-shipped")
		shippedErr = build(r, shipped, false)
	})
	if shippedErr != nil {
		tb.Fatal(shippedErr)
	}
	return shipped
}
