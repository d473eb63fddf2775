package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app"
)

// hookbox replay -q TEXT replays the deliveries of the events whose body
// contains TEXT (ASCII letters in either case), on both stores; a text
// shorter than 3 characters is refused with the server's sentence.
func TestReplayCommand_Search(t *testing.T) { eachStore(t, testReplayCommandSearch) }

func testReplayCommandSearch(t *testing.T, st storeCase) {
	sink := newLedgerSink(t, 200)
	dir := t.TempDir()
	config := writeConfig(t, dir, destinationConfig(sink.url, `["1h"]`), st.config(2*time.Second))
	db := st.open(t, dir)
	ctx := context.Background()
	var ids []uint64
	for i, body := range []string{`{"order":"#1004"}`, `{"order":"#1005"}`, `{"ORDER":"#1004-B","note":"Gift Wrap"}`} {
		e := &app.Event{Source: "gh", ID: fmt.Sprintf("e-%d", i+1), Topic: "push", ReceivedAt: time.Now(), Body: []byte(body)}
		if _, err := db.Accept(ctx, e, e.ReceivedAt.Add(time.Hour), &app.Plan{Direct: app.DirectTo("sink")}); err != nil {
			t.Fatal(err)
		}
		ds, _ := db.EventDeliveries(ctx, e.Seq)
		if err := db.RecordAttempts(ctx, []app.AttemptRecord{{ID: ds[0].ID, Attempt: &app.Attempt{Start: time.Now(), Status: 500}, State: app.Dead}})[0]; err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ds[0].ID)
	}
	db.Close()
	p := start(t, config)
	live := filepath.Join(dir, "live.toml")
	data, _ := os.ReadFile(config)
	os.WriteFile(live, bytes.Replace(data, []byte(`"127.0.0.1:0"`), []byte(`"`+p.addr+`"`), 1), 0o600)
	replay := func(args ...string) (string, string, int) {
		t.Helper()
		return runCLI(t, append([]string{"replay", "-config", live}, args...)...)
	}
	first, third := fmt.Sprint(ids[0]), fmt.Sprint(ids[2])
	for _, tc := range []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"-q", "#1"}, 1, "", `q "#1": a body search needs at least 3 characters`},
		{[]string{"-q", "gift WRAP", "-dry-run"}, 0, "1 matches: 1 dead will be sent\n  #" + third + " sink ← gh/e-3 push (dead)\n", ""},
		{[]string{"-q", "#2000", "-dry-run"}, 0, "nothing matched", ""},
		{[]string{"-q", "#1004"}, 0, "2 match: 2 dead sent\n  #" + first + " sink ← gh/e-1 push (dead), #" + third + " sink ← gh/e-3 push (dead)\n", ""},
	} {
		out, errOut, code := replay(tc.args...)
		if code != tc.code || !strings.Contains(out, tc.out) || !strings.Contains(errOut, tc.err) || tc.err == "" && errOut != "" {
			t.Errorf("replay %q: exit %d\nstdout %q\nstderr %q\nwant exit %d, %q, %q", tc.args, code, out, errOut, tc.code, tc.out, tc.err)
		}
	}
	p.stop(t)
}
