package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A time typed on the command line without a zone is in loc; one with Z
// or an offset is taken as given; a duration ago goes as it is.
func TestTimeArg(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no time zone data: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{"2026-12-06 14:00", "2026-12-06T14:00:00-05:00"},
		{"2026-12-06T14:00", "2026-12-06T14:00:00-05:00"},
		{"2026-12-06 14:00:30", "2026-12-06T14:00:30-05:00"},
		{"2026-07-01 09:30", "2026-07-01T09:30:00-04:00"}, // summer time
		{"2026-12-06", "2026-12-06T00:00:00-05:00"},
		{"2026-12-06T14:00:00Z", "2026-12-06T14:00:00Z"},
		{"2026-12-06T14:00:00+01:00", "2026-12-06T14:00:00+01:00"},
		{"2h", "2h"},
		{"30m", "30m"},
		{"3d", "3d"},
		{"", ""},
	} {
		if got, err := timeArg("since", c.in, ny); err != nil || got != c.want {
			t.Errorf("timeArg(%q) in New York = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"yesterday", "2026-13-01", "14:00", "-2h", "0d"} {
		if got, err := timeArg("since", bad, ny); err == nil || !strings.Contains(err.Error(), "local") {
			t.Errorf("timeArg(%q) = %q, %v; want an error that says how to give a time", bad, got, err)
		}
	}
}

// With TZ set, hookbox replay reads -since and -until in that zone and
// sends them with its offset, and the lists print times in it with the
// zone. The test runs itself again with TZ=America/New_York (time.Local
// is read once, at start). On the old main -since "2026-12-06 14:00" went
// to the server as typed (which refused it: not RFC 3339) and the lists
// printed UTC without saying so.
func TestLocalTimes_TZ(t *testing.T) {
	if os.Getenv("HOOKBOX_TEST_TZ_CHILD") != "1" {
		if _, err := time.LoadLocation("America/New_York"); err != nil {
			t.Skipf("no time zone data: %v", err)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestLocalTimes_TZ$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "TZ=America/New_York", "HOOKBOX_TEST_TZ_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestLocalTimes_TZ") {
			t.Fatalf("with TZ=America/New_York: %v\n%s", err, out)
		}
		return
	}
	if got := time.Now().In(time.Local).Format("MST"); got != "EST" && got != "EDT" {
		t.Fatalf("TZ=America/New_York, but the local zone is %s", got)
	}
	at := time.Date(2026, 12, 6, 19, 5, 0, 0, time.UTC)
	if got, want := listTime(at), "2026-12-06 14:05 EST"; got != want {
		t.Errorf("listTime(%v) = %q; want %q", at, got, want)
	}
	if got := listTime(time.Time{}); got != "-" {
		t.Errorf("listTime(zero) = %q; want -", got)
	}

	// hookbox replay against a server that records what it was asked.
	got := make(chan map[string]any, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.URL.Path != "/api/v1/replay" {
			http.Error(w, fmt.Sprintf("%s: %v", r.URL.Path, err), 400)
			return
		}
		got <- body
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"matched": 0, "dry_run": true}`)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	dir := t.TempDir()
	config := filepath.Join(dir, "config.toml")
	toml := fmt.Sprintf("[server]\nlisten = \"127.0.0.1:%s\"\ndata_dir = %q\n\n[status]\npassword_env = \"HOOKBOX_TEST_PW\"\n", port, dir)
	if err := os.WriteFile(config, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOOKBOX_TEST_PW", "pw-test-1234")
	t.Setenv("HOOKBOX_PASSWORD", "pw-test-1234")
	t.Setenv("HOOKBOX_TOKEN", "")
	var out, errOut strings.Builder
	code := Run(context.Background(), []string{"replay", "-config", config, "-since", "2026-12-06 14:00", "-until", "2026-12-06T20:00:00Z", "-dry-run"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("hookbox replay: %d\n%s%s", code, &out, &errOut)
	}
	body := <-got
	if body["since"] != "2026-12-06T14:00:00-05:00" || body["until"] != "2026-12-06T20:00:00Z" {
		t.Errorf("hookbox replay -since '2026-12-06 14:00' -until 2026-12-06T20:00:00Z sent since %v, until %v; want 2026-12-06T14:00:00-05:00 (New York) and 2026-12-06T20:00:00Z (as given)", body["since"], body["until"])
	}
	errOut.Reset()
	if code := Run(context.Background(), []string{"replay", "-config", config, "-since", "yesterday"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "2026-12-06 14:00, local") {
		t.Errorf("hookbox replay -since yesterday: %d %s; want 2 and how to give a time", code, &errOut)
	}
}
