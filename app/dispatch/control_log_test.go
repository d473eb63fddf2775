package dispatch

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"hookbox/app"
	"hookbox/app/config"
)

// controls is a ControlStore that holds the controls in a map.
type controls map[string]app.DestinationControl

func (cs controls) PauseDestination(_ context.Context, dest string, at time.Time, by, reason string) error {
	cs[dest] = app.DestinationControl{Paused: true, PausedAt: at, PausedBy: by, Reason: reason}
	return nil
}
func (cs controls) ResumeDestination(_ context.Context, dest string) error {
	delete(cs, dest)
	return nil
}
func (cs controls) HoldDestination(context.Context, string, time.Time) error {
	return nil
}
func (cs controls) DestinationControls(context.Context) (map[string]app.DestinationControl, error) {
	return cs, nil
}

// The line a node logs when it reads a pause says paused, and the one it
// logs when it reads the resume says resumed (it said "destination
// paused … paused=false"); a read that changes nothing says nothing.
func TestDispatcher_ControlLines(t *testing.T) {
	cfg, err := config.Parse("test.toml", `
[[source]]
name = "gh"
provider = "github"
secret = "gh-secret"
[[destination]]
name = "sink"
url = "http://127.0.0.1:1/"
[[route]]
source = "gh"
to = ["sink"]
`, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cs := controls{}
	d := New(cfg, nil, nil)
	d.Logger = slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	d.Controls = cs
	ctx, now := context.Background(), time.Now()
	read := func() string {
		t.Helper()
		out.Reset()
		d.ControlsChanged()
		d.readControls(ctx, now)
		return strings.TrimSpace(out.String())
	}
	cs.PauseDestination(ctx, "sink", now, "local:alice", "deploy") //nolint:errcheck // the map's
	if got, want := read(), `level=INFO msg="destination paused: its deliveries wait" destination=sink by=local:alice`; got != want {
		t.Errorf("read of the pause logged\n%s\nwant\n%s", got, want)
	}
	if got := read(); got != "" {
		t.Errorf("a read that changes nothing logged %s", got)
	}
	cs.ResumeDestination(ctx, "sink") //nolint:errcheck // the map's
	if got, want := read(), `level=INFO msg="destination resumed: its deliveries go out" destination=sink`; got != want {
		t.Errorf("read of the resume logged\n%s\nwant\n%s", got, want)
	}
}
