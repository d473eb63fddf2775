package clitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// need fails the test under CI=true, where .ci/run installed what the
// interoperability tests use, and skips it elsewhere with why.
func need(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		tb.Fatalf("%s (.ci/run installs it)", why)
	}
	tb.Skipf("%s; .ci/run installs it", why)
}

// Node returns the path of the node binary, for the tests that run the
// providers' official SDKs and Node's http module.
func Node(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		need(tb, "node is not installed")
	}
	return p
}

// InteropDir returns app/cli/testdata/interop, where the pinned npm
// packages are installed (npm ci), and fails or skips when they are not.
func InteropDir(tb testing.TB) string {
	tb.Helper()
	d := filepath.Join(Root(tb), "app", "cli", "testdata", "interop")
	if _, err := os.Stat(filepath.Join(d, "node_modules", "standardwebhooks", "package.json")); err != nil {
		need(tb, "the interop npm packages are not installed (cd app/cli/testdata/interop && npm ci)")
	}
	return d
}

// Nginx returns the path of Debian's nginx binary.
func Nginx(tb testing.TB) string {
	tb.Helper()
	for _, p := range []string{"nginx", "/usr/sbin/nginx"} {
		if q, err := exec.LookPath(p); err == nil {
			return q
		}
	}
	need(tb, "nginx is not installed")
	return ""
}

// Python returns the path of python3, which runs the http.server
// destination (Debian's python3 is on every machine .ci/run runs on).
func Python(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		need(tb, "python3 is not installed")
	}
	return p
}
