package cli_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// [log] sets the format and the level; -log-level, when given, wins over
// level.
func TestServe_LogConfig(t *testing.T) {
	env := []string{"E2E_GH_SECRET=" + e2eSecret}
	t.Run("FlagOverLevel", func(t *testing.T) {
		// At level error, "hookbox started" (info) would not be written,
		// and startWith would wait for it in vain.
		p := startWith(t, writeConfig(t, t.TempDir(), "[log]\nformat = \"json\"\nlevel = \"error\"\n"), env, "-log-level", "info")
		p.stop(t)
		for _, line := range strings.Split(strings.TrimSpace(p.logText()), "\n") {
			var f map[string]any
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Errorf("not JSON (%v): %s", err, line)
			}
		}
	})
	t.Run("Level", func(t *testing.T) {
		// The scheduler's own lines are debug: at level debug its start
		// shows, at the default level it does not.
		p := startWith(t, writeConfig(t, t.TempDir(), "[log]\nlevel = \"debug\"\n"), env)
		apptest.Until(t, 30*time.Second, func() error {
			if !strings.Contains(p.logText(), `level=DEBUG msg="cron start" component=cron`) {
				return fmt.Errorf("no debug line at level debug:\n%s", p.logText())
			}
			return nil
		})
		p.stop(t)
		q := startWith(t, writeConfig(t, t.TempDir()), env)
		q.stop(t)
		if strings.Contains(q.logText(), "level=DEBUG") {
			t.Errorf("a debug line at the default level:\n%s", q.logText())
		}
	})
}
