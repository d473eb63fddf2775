package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// restore refuses while systemd runs hookbox.socket or hookbox.service:
// with the socket listening, the next webhook would start hookbox on the
// file being replaced, and the data file's lock says nothing then (issue
// 46). A fake systemctl in PATH answers is-active for the units listed
// in $ACTIVE.
func TestRestore_RefusesWhileUnitsRun(t *testing.T) {
	fakes := t.TempDir()
	script := "#!/bin/sh\n[ \"$1\" = is-active ] || exit 1\nfor u in $ACTIVE; do [ \"$u\" = \"$3\" ] && exit 0; done\nexit 3\n"
	if err := os.WriteFile(filepath.Join(fakes, "systemctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", fakes+string(os.PathListSeparator)+os.Getenv("PATH"))
	config := writeTestConfig(t, "", "")
	backup := filepath.Join(t.TempDir(), "copy.db")
	if err := os.WriteFile(backup, []byte("not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, active := range []string{"hookbox.socket", "hookbox.service", "hookbox.socket hookbox.service"} {
		t.Setenv("ACTIVE", active)
		code, out := runCmd("restore", "-config", config, backup)
		unit := strings.Fields(active)[0]
		if code != 1 || !strings.Contains(out, unit+" is active") || !strings.Contains(out, "systemctl stop hookbox.socket hookbox") {
			t.Errorf("with %s active: exit %d\n%s", active, code, out)
		}
	}
	// Neither active: nothing to refuse for (the restore itself checks the
	// copy in a child process, which in this test binary would be the test).
	t.Setenv("ACTIVE", "")
	if unit := activeUnit(); unit != "" {
		t.Errorf("with neither active, activeUnit = %q", unit)
	}
}
