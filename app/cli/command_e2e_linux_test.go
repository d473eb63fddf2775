package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hookbox/app/apptest"
)

// The command destination end to end, on both stores, with the real
// binary and real scripts: retried on exit 75 until it exits 0 (one line
// per event, every attempt recorded with its output), dead at once on exit
// 65 and replayed, killed with its children at its timeout and retried,
// never more processes at once than its concurrency, paused and resumed.
func TestEndToEnd_CommandDestination(t *testing.T) {
	t.Parallel() // mostly waits on retries, timeouts and scripts that sleep
	eachStore(t, testCommandDestination)
}

// commandScripts are the scripts of the test, each run by a destination;
// $1 is the directory they keep their state in.
var commandScripts = map[string]string{
	// Exits 75 twice, then takes the event: one line per event.
	"retrying": `n=$(cat "$1/count-$HOOKBOX_EVENT_ID" 2>/dev/null || echo 0)
n=$((n+1))
echo $n > "$1/count-$HOOKBOX_EVENT_ID"
echo "attempt $n of $HOOKBOX_EVENT_ID ($HOOKBOX_ATTEMPT)"
[ $n -lt 3 ] && { echo "busy" >&2; exit 75; }
body=$(cat)
printf '%s\n' "$body" >> "$1/lines"
`,
	// Refuses the event (65) until the file accept exists.
	"refusing": `[ -e "$1/accept" ] && { cat >> "$1/accepted"; exit 0; }
echo "bad data in $HOOKBOX_EVENT_ID" >&2
exit 65
`,
	// Starts a child and outlives its timeout; notes its group.
	"slow": `sleep 1000 &
echo $$ >> "$1/groups"
echo "started $!"
sleep 1000
`,
	// Notes how many of its kind run at once: a file per run in running/,
	// counted after its own is made.
	"limited": `mkdir -p "$1/running"
touch "$1/running/$$"
ls "$1/running" | wc -l >> "$1/overlap"
sleep 0.2
rm "$1/running/$$"
body=$(cat)
printf '%s\n' "$body" >> "$1/limited"
`,
}

func commandConfig(dir string) string {
	var b strings.Builder
	b.WriteString("\n[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n")
	for _, name := range []string{"retrying", "refusing", "slow", "limited"} {
		prog := filepath.Join(dir, name+".sh")
		extra := `retry = ["10ms", "10ms", "10ms", "10ms"]`
		switch name {
		case "slow":
			extra = "retry = [\"10ms\", \"10ms\"]\ntimeout = \"1s\""
		case "limited":
			extra += "\nconcurrency = 2"
		}
		fmt.Fprintf(&b, "\n[[destination]]\nname = %q\ncommand = [%q, %q]\n%s\n", name, prog, dir, extra)
		fmt.Fprintf(&b, "\n[[route]]\nsource = \"gh\"\ntopics = [%q]\nto = [%q]\n", name, name)
	}
	return b.String()
}

// postTopic posts event id with body and topic to gh.
func postTopic(t *testing.T, addr, topic, id, body string) {
	t.Helper()
	h := githubHeaders([]byte(body), e2eSecret, id)
	h["X-GitHub-Event"] = topic
	if r := post(t, addr, "gh", []byte(body), h); r.code != 200 || r.body["status"] != "accepted" {
		t.Fatalf("post %s: %d %v", id, r.code, r.body)
	}
}

// attemptOut is an attempt in GET /api/v1/deliveries/{id}.
type attemptOut struct {
	N        int    `json:"n"`
	Status   int    `json:"status"`
	Error    string `json:"error"`
	Response string `json:"response"`
	Probe    bool   `json:"probe"`
}

// deliveryOut is GET /api/v1/deliveries/{id}.
type deliveryOut struct {
	ID       uint64       `json:"id"`
	State    string       `json:"state"`
	Attempts int          `json:"attempts"`
	Due      *time.Time   `json:"due"`
	History  []attemptOut `json:"attempts_detail"`
	Seq      uint64       `json:"event_seq"`
}

// deliveryOf reads the one delivery of gh's event id through the API.
func deliveryOf(t *testing.T, addr, id string) deliveryOut {
	t.Helper()
	code, raw := apiDo(t, addr, "GET", "/events?source=gh&id="+url.QueryEscape(id), nil)
	var list struct {
		Items []struct {
			Seq uint64 `json:"seq"`
		} `json:"items"`
	}
	if err := json.Unmarshal(raw, &list); code != 200 || err != nil || len(list.Items) != 1 {
		t.Fatalf("GET /api/v1/events?id=%s: %d %s %v", id, code, raw, err)
	}
	code, raw = apiDo(t, addr, "GET", "/events/"+strconv.FormatUint(list.Items[0].Seq, 10), nil)
	var ev struct {
		Deliveries []deliveryOut `json:"deliveries"`
	}
	if err := json.Unmarshal(raw, &ev); code != 200 || err != nil || len(ev.Deliveries) != 1 {
		t.Fatalf("GET /api/v1/events/%d: %d %s %v", list.Items[0].Seq, code, raw, err)
	}
	code, raw = apiDo(t, addr, "GET", "/deliveries/"+strconv.FormatUint(ev.Deliveries[0].ID, 10), nil)
	var d deliveryOut
	if err := json.Unmarshal(raw, &d); code != 200 || err != nil {
		t.Fatalf("GET /api/v1/deliveries/%d: %d %s %v", ev.Deliveries[0].ID, code, raw, err)
	}
	return d
}

// waitDelivery waits until gh's event id's delivery is in state with
// attempts attempts, and returns it.
func waitDelivery(t *testing.T, addr, id, state string, attempts int) deliveryOut {
	t.Helper()
	var d deliveryOut
	apptest.Until(t, 60*time.Second, func() error {
		if d = deliveryOf(t, addr, id); d.State != state || d.Attempts != attempts {
			return fmt.Errorf("delivery of %s: %+v; want %s after %d attempts", id, d, state, attempts)
		}
		return nil
	})
	return d
}

// waitLines waits until the file at path has n lines, and returns them.
func waitLines(t *testing.T, path string, n int) []string {
	t.Helper()
	var lines []string
	apptest.Until(t, 60*time.Second, func() error {
		b, _ := os.ReadFile(path)
		lines = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
		if len(b) == 0 {
			lines = nil
		}
		if len(lines) < n {
			return fmt.Errorf("%s has %d lines; want %d", path, len(lines), n)
		}
		return nil
	})
	return lines
}

func testCommandDestination(t *testing.T, st storeCase) {
	dir := t.TempDir()
	for name, text := range commandScripts {
		if err := os.WriteFile(filepath.Join(dir, name+".sh"), []byte("#!/bin/sh\n"+text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	config := writeConfig(t, t.TempDir(), commandConfig(dir), st.config(15*time.Second)) // the default timeout
	p := start(t, config)

	t.Run("RetriedUntilExit0", func(t *testing.T) {
		for i := range 3 {
			postTopic(t, p.addr, "retrying", fmt.Sprintf("r-%d", i), fmt.Sprintf(`{"n": %d}`, i))
		}
		for i := range 3 {
			id := fmt.Sprintf("r-%d", i)
			d := waitDelivery(t, p.addr, id, "delivered", 3)
			for j, a := range d.History {
				want := fmt.Sprintf("attempt %d of %s (%d)\n", j+1, id, j+1)
				if j < 2 {
					want += "busy\n"
				}
				if a.Response != want || a.Status != 0 {
					t.Errorf("%s attempt %d: response %q status %d; want %q and no status", id, j+1, a.Response, a.Status, want)
				}
				if wantErr := map[bool]string{true: "the command asked for a retry (exit 75)", false: ""}[j < 2]; a.Error != wantErr {
					t.Errorf("%s attempt %d: error %q; want %q", id, j+1, a.Error, wantErr)
				}
			}
		}
		lines := waitLines(t, filepath.Join(dir, "lines"), 3)
		if len(lines) != 3 {
			t.Fatalf("lines = %q; want one per event", lines)
		}
		for i := range 3 {
			if !bytes.Contains([]byte(strings.Join(lines, "\n")), []byte(fmt.Sprintf(`{"n": %d}`, i))) {
				t.Errorf("lines = %q; want the body of event %d, byte-exact", lines, i)
			}
		}
		// The page shows how the attempts ended, not an HTTP status.
		code, page := getAuth(t, p.addr, "/events/"+strconv.FormatUint(deliveryOf(t, p.addr, "r-0").Seq, 10))
		if code != 200 || !strings.Contains(page, ">exit 75<") || strings.Contains(page, "HTTP 0") {
			t.Errorf("the event page does not show exit 75:\n%s", page)
		}
	})

	t.Run("Exit65DeadAtOnceThenReplayed", func(t *testing.T) {
		postTopic(t, p.addr, "refusing", "x-1", `{"bad": true}`)
		d := waitDelivery(t, p.addr, "x-1", "dead", 1)
		if a := d.History[0]; a.Error != "dead: the command refused the event (exit 65), not retried" || a.Response != "bad data in x-1\n" {
			t.Fatalf("attempt = %+v", a)
		}
		if err := os.WriteFile(filepath.Join(dir, "accept"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if code, raw := apiDo(t, p.addr, "POST", "/deliveries/"+strconv.FormatUint(d.ID, 10)+"/replay", nil); code != 200 {
			t.Fatalf("replay: %d %s", code, raw)
		}
		waitDelivery(t, p.addr, "x-1", "delivered", 2)
		if got := waitLines(t, filepath.Join(dir, "accepted"), 1); got[0] != `{"bad": true}` {
			t.Fatalf("accepted = %q", got)
		}
	})

	t.Run("TimeoutKillsGroupAndRetries", func(t *testing.T) {
		postTopic(t, p.addr, "slow", "s-1", `{}`)
		d := waitDelivery(t, p.addr, "s-1", "dead", 3)
		for _, a := range d.History {
			if a.Error != "the command was killed at its 1s timeout" || !strings.HasPrefix(a.Response, "started ") {
				t.Errorf("attempt = %+v; want the command was killed at its 1s timeout, with its output", a)
			}
		}
		groups := waitLines(t, filepath.Join(dir, "groups"), 3)
		for _, g := range groups {
			pgid, err := strconv.Atoi(g)
			if err != nil {
				t.Fatalf("groups = %q", groups)
			}
			if live := waitGroupGone(t, pgid); len(live) > 0 {
				t.Errorf("process group %d is left with %v", pgid, live)
			}
		}
	})

	t.Run("ConcurrencyBoundsProcesses", func(t *testing.T) {
		for i := range 10 {
			postTopic(t, p.addr, "limited", fmt.Sprintf("c-%d", i), fmt.Sprintf(`{"c": %d}`, i))
		}
		waitLines(t, filepath.Join(dir, "limited"), 10)
		overlap := waitLines(t, filepath.Join(dir, "overlap"), 10)
		most := 0
		for _, o := range overlap {
			n, _ := strconv.Atoi(strings.TrimSpace(o))
			most = max(most, n)
		}
		if most != 2 {
			t.Fatalf("at most %d ran at once (%q); want 2, never 3", most, overlap)
		}
	})

	t.Run("PauseResume", func(t *testing.T) {
		if code, raw := apiDo(t, p.addr, "POST", "/destinations/retrying/pause", []byte(`{"reason": "test"}`)); code != 200 {
			t.Fatalf("pause: %d %s", code, raw)
		}
		postTopic(t, p.addr, "retrying", "p-1", `{"paused": 1}`)
		// A command that does not run has no signal of its own: an event
		// for another destination, posted after, is run (for 0.2 s at
		// least) and recorded; the paused one's would have run within ms.
		postTopic(t, p.addr, "limited", "p-mark", `{"mark": 1}`)
		waitDelivery(t, p.addr, "p-mark", "delivered", 1)
		if _, err := os.Stat(filepath.Join(dir, "count-p-1")); err == nil {
			t.Fatal("the command ran while its destination was paused")
		}
		if d := deliveryOf(t, p.addr, "p-1"); d.State != "pending" || d.Attempts != 0 {
			t.Fatalf("while paused: %+v", d)
		}
		if code, raw := apiDo(t, p.addr, "POST", "/destinations/retrying/resume", nil); code != 200 {
			t.Fatalf("resume: %d %s", code, raw)
		}
		waitDelivery(t, p.addr, "p-1", "delivered", 3)
		if lines := waitLines(t, filepath.Join(dir, "lines"), 4); lines[3] != `{"paused": 1}` {
			t.Fatalf("lines = %q", lines)
		}
	})

	// A reload (SIGHUP) puts a changed command in force for the next
	// attempts.
	t.Run("ReloadChangesCommand", func(t *testing.T) {
		v2 := filepath.Join(dir, "v2.sh")
		if err := os.WriteFile(v2, []byte("#!/bin/sh\nbody=$(cat)\nprintf 'v2 %s %s\\n' \"$2\" \"$body\" >> \"$1/v2\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(config)
		old := fmt.Sprintf("command = [%q, %q]", filepath.Join(dir, "retrying.sh"), dir)
		changed := bytes.Replace(data, []byte(old), []byte(fmt.Sprintf("command = [%q, %q, \"again\"]", v2, dir)), 1)
		if bytes.Equal(changed, data) {
			t.Fatalf("no %s in the config", old)
		}
		if err := os.WriteFile(config, changed, 0o600); err != nil {
			t.Fatal(err)
		}
		p.cmd.Process.Signal(syscall.SIGHUP)
		waitLog(t, p, "config reloaded", 10*time.Second)
		postTopic(t, p.addr, "retrying", "v-1", `{"v": 2}`)
		if got := waitLines(t, filepath.Join(dir, "v2"), 1); got[0] != `v2 again {"v": 2}` {
			t.Fatalf("v2 = %q", got)
		}
		waitDelivery(t, p.addr, "v-1", "delivered", 1)
	})

	t.Run("DestinationsAPI", func(t *testing.T) {
		code, raw := apiDo(t, p.addr, "GET", "/destinations", nil)
		if code != 200 || !strings.Contains(string(raw), `"name":"limited"`) ||
			!strings.Contains(string(raw), `"kind":"command","program":"`+filepath.Join(dir, "limited.sh")+`","arguments":1}`) {
			t.Fatalf("GET /api/v1/destinations: %d %s", code, raw)
		}
		if strings.Contains(string(raw), `"`+dir+`"`) {
			t.Fatalf("GET /api/v1/destinations shows an argument: %s", raw)
		}
	})
	p.stop(t)
}

// waitGroupGone waits a few seconds for the group pgid to have no live
// process (a killed one dies after kill returns; a zombie waiting for
// init is dead) and returns what is alive in it then, from /proc.
func waitGroupGone(t *testing.T, pgid int) []string {
	t.Helper()
	var live []string
	apptest.Within(10*time.Second, func() bool {
		live = live[:0]
		stats, _ := filepath.Glob("/proc/[0-9]*/stat")
		for _, p := range stats {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			end := bytes.LastIndexByte(b, ')')
			f := strings.Fields(string(b[end+1:]))
			if len(f) >= 3 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
				live = append(live, string(b[:end+1]))
			}
		}
		return len(live) == 0
	})
	return live
}

// hookbox stopping with a command running past the shutdown's grace kills
// the command's whole group and records nothing of the attempt: after the
// restart it runs again as the same attempt.
func TestEndToEnd_CommandKilledAtShutdown(t *testing.T) {
	t.Parallel() // mostly waits out the shutdown's grace
	dir := t.TempDir()
	prog := filepath.Join(dir, "hang.sh")
	// While the file hang exists it starts a child and waits for it.
	text := "#!/bin/sh\necho $$ $HOOKBOX_ATTEMPT >> \"$1/runs\"\n[ -e \"$1/hang\" ] || exit 0\nsleep 1000 &\nwait\n"
	if err := os.WriteFile(prog, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hang"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf("\n[status]\npassword_env = \"E2E_STATUS_PASSWORD\"\n\n[[destination]]\nname = \"hang\"\ncommand = [%q, %q]\ntimeout = \"5m\"\n\n[[route]]\nsource = \"gh\"\nto = [\"hang\"]\n", prog, dir)
	config := writeConfig(t, t.TempDir(), cfg)
	p := start(t, config)
	postTopic(t, p.addr, "push", "h-1", `{"h": 1}`)
	first := strings.Fields(waitLines(t, filepath.Join(dir, "runs"), 1)[0])
	pgid, _ := strconv.Atoi(first[0])
	p.stop(t) // SIGTERM: the command outlives the grace and is killed
	if live := waitGroupGone(t, pgid); len(live) > 0 {
		t.Fatalf("after hookbox stopped, process group %d is left with %v", pgid, live)
	}
	os.Remove(filepath.Join(dir, "hang"))
	p = start(t, config)
	runs := waitLines(t, filepath.Join(dir, "runs"), 2)
	if first[1] != "1" || !strings.HasSuffix(runs[1], " 1") {
		t.Fatalf("runs = %q; want attempt 1 twice: the killed one is not recorded", runs)
	}
	if d := waitDelivery(t, p.addr, "h-1", "delivered", 1); d.History[0].Error != "" {
		t.Fatalf("delivery = %+v", d)
	}
	p.stop(t)
}
