package cli

import (
	"bytes"
	"encoding/json"
	"log"
	"log/slog"
	"strings"
	"testing"

	"hookbox/app"
)

// Every line has one component: its logger's, or "hookbox" for a logger
// that names none (the standard library's log among them).
func TestNewLogger_Component(t *testing.T) {
	var buf bytes.Buffer
	l := newLogger(&buf, app.LogConfig{Format: app.LogJSON}, slog.LevelDebug)
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(l)
	l.Info("bare")
	l.With("component", "dispatch").Info("named", "destination", "pos")
	l.Info("named in the record", "component", "receive")
	l.With("x", 1).WithGroup("g").Info("grouped", "y", 2)
	log.Print("from the standard library")
	l.Debug("debug line")
	want := []string{"hookbox", "dispatch", "receive", "hookbox", "hookbox", "hookbox"}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, line := range lines {
		var f map[string]any
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, line)
		}
		if n := strings.Count(line, `"component":`); n != 1 || f["component"] != want[i] {
			t.Errorf("line %d: %d components, %v; want one, %q: %s", i, n, f["component"], want[i], line)
		}
	}
	buf.Reset()
	newLogger(&buf, app.LogConfig{Format: app.LogText}, slog.LevelWarn).Info("below the level")
	if buf.Len() != 0 {
		t.Errorf("an info line at level warn: %s", buf.String())
	}
}
