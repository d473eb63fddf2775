package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"
)

func runVersion(_ context.Context, c *command, args []string, stdout, stderr io.Writer) int {
	fs := c.flags()
	if code := c.parseNone(fs, args, stdout, stderr); code >= 0 {
		return code
	}
	fmt.Fprintln(stdout, versionLine())
	return 0
}

// versionLine describes this binary on one line: the version (the ldflags
// value, else the module version, else "dev"), the commit, the build time
// and the Go version.
func versionLine() string {
	v, commit, committed, modified, goVersion := Version, "", "", false, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				committed = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "dev"
	}
	var parts []string
	if commit != "" {
		c := "commit " + commit[:min(12, len(commit))]
		if modified {
			c += "+modified"
		}
		if committed != "" {
			c += " of " + committed
		}
		parts = append(parts, c)
	}
	built := BuildTime
	if built == "" {
		if exe, err := os.Executable(); err == nil {
			if fi, err := os.Stat(exe); err == nil {
				built = fi.ModTime().UTC().Format(time.RFC3339)
			}
		}
	}
	if built != "" {
		parts = append(parts, "built "+built)
	}
	if goVersion != "" {
		parts = append(parts, goVersion)
	}
	if len(parts) == 0 {
		return "hookbox " + v
	}
	return "hookbox " + v + " (" + strings.Join(parts, ", ") + ")"
}
