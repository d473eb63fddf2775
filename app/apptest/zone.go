package apptest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// UnderZone runs the calling test again in a child process of the test
// binary whose TZ is zone (a process reads time.Local once), failing t
// when the child fails, and reports whether this is that child: a test
// calls it first and, when it returns false, returns.
func UnderZone(t *testing.T, zone string) bool {
	t.Helper()
	if os.Getenv("HOOKBOX_TEST_CHILD_TZ") == zone {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "TZ="+zone, "HOOKBOX_TEST_CHILD_TZ="+zone)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("under TZ=%s: %v\n%s", zone, err, out)
	}
	return false
}
