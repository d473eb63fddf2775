package cli_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hookbox/app/bench"
	"hookbox/app/cli/clitest"
	"hookbox/storage/postgres/pgtest"
)

// A burst of updates of one entity becomes one delivery of the latest,
// on either store, through the real binary.
func TestEndToEnd_Debounce(t *testing.T) {
	t.Parallel() // it waits out debounce windows
	eachStore(t, testDebounce)
}

func testDebounce(t *testing.T, st storeCase) {
	sink := newLedgerSink(t, 200)
	dir := t.TempDir()
	config := writeConfig(t, dir, fmt.Sprintf(`
[[destination]]
name = "sink"
url = %q
timeout = "2s"

[[route]]
source = "gh"
key = "{body.customer}"
debounce = "3s"
to = ["sink"]
`, sink.url), st.config(2*time.Second))
	// The window starts at a key's first event and is not extended: its 20
	// posts must all come within it, which 700 ms did not always give on a
	// loaded machine with an fsync per accept (CI: 3 requests, not 2).
	p := start(t, config)
	var last string
	for i := range 20 {
		id := fmt.Sprintf("deb-%s-c1-%d", st.name, i)
		body := []byte(fmt.Sprintf(`{"customer": "c1", "n": %d}`, i))
		if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, id)); r.code != 200 || r.body["status"] != "accepted" {
			t.Fatalf("post %d: %d %v", i, r.code, r.body)
		}
		last = id
	}
	other := "deb-" + st.name + "-c2"
	body := []byte(`{"customer": "c2", "n": 0}`)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, other)); r.code != 200 {
		t.Fatalf("post c2: %d %v", r.code, r.body)
	}
	sink.waitDelivered(t, []string{last, other}, 15*time.Second)
	// Nothing more comes of those windows. A send that does not happen has
	// no signal of its own: a third customer's update, posted now, is
	// delivered at the end of its own window, a whole window (3 s) after
	// the others were.
	late := "deb-" + st.name + "-c3"
	body = []byte(`{"customer": "c3", "n": 0}`)
	if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, late)); r.code != 200 {
		t.Fatalf("post c3: %d %v", r.code, r.body)
	}
	sink.waitDelivered(t, []string{late}, 15*time.Second)
	if n := sink.attempts.Load(); n != 3 {
		t.Fatalf("the sink got %d requests for 22 updates of 3 customers, want 3", n)
	}
	p.stop(t)
}

// On PostgreSQL: check shows where the state is with the password masked;
// backup and restore say that the backups are the database's and fail;
// serve takes the URL from the environment, answers, and never logs the
// password.
func TestPostgres_Commands(t *testing.T) {
	dbURL := pgtest.URL(t)
	u, _ := url.Parse(dbURL)
	password, _ := u.User.Password()
	if password == "" {
		t.Fatal("the test database's URL has no password: the masking is not tested")
	}
	dir := t.TempDir()
	config := writeConfig(t, dir, "[storage]\nbackend = \"postgres\"\nurl_env = \"E2E_DATABASE_URL\"\n")
	env := append(os.Environ(), "E2E_GH_SECRET="+e2eSecret, "E2E_DATABASE_URL="+dbURL, "E2E_STATUS_PASSWORD=pw-e2e")
	run := func(args ...string) (string, error) {
		cmd := exec.Command(clitest.Binary(t), args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), password) {
			t.Fatalf("hookbox %s shows the database password:\n%s", args[0], out)
		}
		return string(out), err
	}
	out, err := run("check", "-config", config)
	if err != nil || !strings.Contains(out, "data in PostgreSQL at postgres://hookbox:xxxxx@") {
		t.Fatalf("check: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"backup", "-config", config, "-o", filepath.Join(dir, "b.db")}, {"restore", "-config", config, filepath.Join(dir, "b.db")}} {
		out, err := run(args...)
		if err == nil || !strings.Contains(out, "the backups are the database's") || !strings.Contains(out, "pg_dump") {
			t.Fatalf("%s on postgres: %v\n%s", args[0], err, out)
		}
	}
	out, err = run("check", "-config", writeConfig(t, t.TempDir(), "[storage]\nbackend = \"postgres\"\nurl_env = \"E2E_NO_SUCH_VAR\"\n"))
	if err == nil || !strings.Contains(out, "storage.url_env: environment variable E2E_NO_SUCH_VAR is not set") {
		t.Fatalf("check without the URL: %v\n%s", err, out)
	}

	p := startWith(t, config, []string{"E2E_GH_SECRET=" + e2eSecret, "E2E_DATABASE_URL=" + dbURL})
	body := []byte(`{"n": 1}`)
	for _, want := range []string{"accepted", "duplicate"} {
		if r := post(t, p.addr, "gh", body, githubHeaders(body, e2eSecret, "pg-1")); r.code != 200 || r.body["status"] != want {
			t.Fatalf("post: %d %v; want %s", r.code, r.body, want)
		}
	}
	p.stop(t)
	log := p.logText()
	if strings.Contains(log, password) || !strings.Contains(log, "xxxxx") {
		t.Fatalf("the log shows the password, or not the masked URL:\n%s", log)
	}
}

// bench -compare -store postgres runs a PostgreSQL node in the same run
// as the bbolt node and the ceiling, in a schema of its own that it drops,
// and prints its ratio to the bbolt node.
func TestBench_ComparePostgres(t *testing.T) {
	dbURL := pgtest.URL(t) // a schema to hold nothing: the bench makes its own
	out := filepath.Join(t.TempDir(), "bench.json")
	stdout, stderr, code := hookbox(t, nil, "bench", "-compare", "-c", "4", "-d", "1s", "-warmup", "100ms", "-json", out, "-store", "postgres", "-database-url", dbURL)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "postgres: the PostgreSQL node answers") || !strings.Contains(stdout, "xxxxx") {
		t.Fatalf("no ratio to the bbolt node, or the URL unmasked:\n%s", stdout)
	}
	u, _ := url.Parse(dbURL)
	if p, _ := u.User.Password(); p != "" && strings.Contains(stdout+stderr, p) {
		t.Fatal("bench printed the database password")
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rs []bench.Result
	if err := json.Unmarshal(b, &rs); err != nil || len(rs) != 4 {
		t.Fatalf("%d results (%v), want the ceiling, the relay, bbolt and postgres", len(rs), err)
	}
	if pg := rs[3]; pg.Requests == 0 || pg.Status["200"] != pg.Requests || pg.Delivered < pg.Status["200"] {
		t.Fatalf("postgres node: %d requests, status %v, %d delivered", pg.Requests, pg.Status, pg.Delivered)
	}
	if _, stderr, code := hookbox(t, nil, "bench", "-compare", "-store", "sqlite"); code != 2 || !strings.Contains(stderr, "-store takes postgres") {
		t.Fatalf("-store sqlite: exit %d, %s", code, stderr)
	}
}
